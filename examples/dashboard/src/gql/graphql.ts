/* eslint-disable */
/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';
/**
 * Overall order state (docs/api/cloud.md §3.1): UNPAID (created, not paid; takes nothing) →
 * PROVISIONING (paid) → ACTIVE (resource provisioned) or FAILED (refunded in full).
 */
export type OrderStatus =
  /** Provisioned: `resource` is set. Renewals keep it ACTIVE. */
  | 'ACTIVE'
  /** The vendor refused; refunded in full. Terminal. */
  | 'FAILED'
  /** Paid; waiting for the vendor. */
  | 'PROVISIONING'
  /** Created, not paid; nothing taken. */
  | 'UNPAID';

/**
 * Input of submitVideoGeneration: the REST fields of docs/api/generation.md §2.1 in camelCase. Every
 * reference URL must be a public HTTPS URL of at most 2048 characters (400 `<field> must be a public
 * HTTPS URL`); the singular and plural fields of a kind count together against the model's limits
 * (`Model.references`; beyond them 400 `<field> has an unsupported value`).
 */
export type SubmitVideoGenerationInput = {
  /** Videos to make, 1-4; otherwise 400 `count has an unsupported value`. The price is per video. */
  count?: number | null | undefined;
  /** Last-frame image URL; model 39 only (elsewhere 400 `frame_end has an unsupported value`). */
  frameEnd?: string | null | undefined;
  /** First-frame image URL; model 39 only (elsewhere 400 `frame_start has an unsupported value`). */
  frameStart?: string | null | undefined;
  /** 52, 67, 69, 51 or 39; another model id: 400 `model_id must be one of: 52, 51, 67, 69, 39, 45` (45, the image model: `model_id has an unsupported value`). */
  modelId?: number | null | undefined;
  /** Non-empty description of the video: at most 4000 Unicode code points (an emoji counts once), no U+0000; otherwise 400 `prompt must be a non-empty string`. */
  prompt: string;
  /** One reference audio URL (models 52, 67, 69, 51; on 52, 67 and 69 only with a reference image or video). */
  referenceAudio?: string | null | undefined;
  /** Reference audio URLs (models 52, 67, 69, 51; on 52, 67 and 69 only with a reference image or video). */
  referenceAudios?: Array<string> | null | undefined;
  /** One reference image URL (models 52, 67, 69, 51, 39). */
  referenceImage?: string | null | undefined;
  /** Reference image URLs (models 52, 67, 69, 51, 39). */
  referenceImages?: Array<string> | null | undefined;
  /** One reference video URL (models 52, 67, 69, 51). */
  referenceVideo?: string | null | undefined;
  /** Reference video URLs (models 52, 67, 69, 51). */
  referenceVideos?: Array<string> | null | undefined;
  /** One of the model's resolutions, any letter case ("720p" = "720P"); omitted: the model's lowest. Otherwise 400 `resolution has an unsupported value`. */
  resolution?: string | null | undefined;
  /** Duration in seconds, one the model allows at the resolution (`Model.durations`); omitted: the model's `defaultSeconds`. Otherwise 400 `seconds has an unsupported value`. */
  seconds?: number | null | undefined;
  /** Aspect ratio, one of the model's `sizes` (exact spelling); omitted: not sent to the provider. Otherwise 400 `size has an unsupported value`. */
  size?: string | null | undefined;
};

/** Task status (docs/api/generation.md §3): the enum of the spec's numeric codes 0-4. */
export type TaskStatus =
  /** 2: generation failed; `error` holds the reason and the price is refunded in full. Terminal. */
  | 'FAILED'
  /** 3: processing. */
  | 'PROCESSING'
  /** 0: waiting or queued. */
  | 'QUEUED'
  /** 4: submitted, or assets being synchronized. */
  | 'SUBMITTED'
  /** 1: generation succeeded; `result` holds the address. Terminal. */
  | 'SUCCEEDED';

export type DashboardQueryVariables = Exact<{
  customerId: string;
}>;


export type DashboardQuery = { viewer: { balance: { amount: string } | null, spent: { amount: string } | null, tasks: { totalCount: number, nodes: Array<{ id: string, status: TaskStatus, result: string | null, price: { amount: string }, model: { name: string } }> } | null, orders: { nodes: Array<{ id: string, status: OrderStatus, amount: { amount: string }, product: { name: string, vendor: { name: string } } | null, resource: { expiresAt: string } | null }> } | null, customerBalance: { available: { amount: string }, creditLine: { amount: string } } | null } | null };

export type SubmitVideoMutationVariables = Exact<{
  input: SubmitVideoGenerationInput;
}>;


export type SubmitVideoMutation = { submitVideoGeneration: { task: { id: string, status: TaskStatus, price: { amount: string } } } | null };

export type TaskStatusSubscriptionVariables = Exact<{
  taskId: string | number;
}>;


export type TaskStatusSubscription = { taskStatusChanged: { id: string, status: TaskStatus, statusName: string, result: string | null, error: string | null, updatedAt: string } };


export const DashboardDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"Dashboard"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"customerId"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"viewer"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"balance"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"amount"}}]}},{"kind":"Field","name":{"kind":"Name","value":"spent"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"amount"}}]}},{"kind":"Field","name":{"kind":"Name","value":"tasks"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"first"},"value":{"kind":"IntValue","value":"20"}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"totalCount"}},{"kind":"Field","name":{"kind":"Name","value":"nodes"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"status"}},{"kind":"Field","name":{"kind":"Name","value":"result"}},{"kind":"Field","name":{"kind":"Name","value":"price"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"amount"}}]}},{"kind":"Field","name":{"kind":"Name","value":"model"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"name"}}]}}]}}]}},{"kind":"Field","name":{"kind":"Name","value":"orders"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"first"},"value":{"kind":"IntValue","value":"20"}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"nodes"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"status"}},{"kind":"Field","name":{"kind":"Name","value":"amount"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"amount"}}]}},{"kind":"Field","name":{"kind":"Name","value":"product"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"vendor"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"name"}}]}}]}},{"kind":"Field","name":{"kind":"Name","value":"resource"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"expiresAt"}}]}}]}}]}},{"kind":"Field","name":{"kind":"Name","value":"customerBalance"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"customerId"},"value":{"kind":"Variable","name":{"kind":"Name","value":"customerId"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"available"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"amount"}}]}},{"kind":"Field","name":{"kind":"Name","value":"creditLine"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"amount"}}]}}]}}]}}]}}]} as unknown as DocumentNode<DashboardQuery, DashboardQueryVariables>;
export const SubmitVideoDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"SubmitVideo"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"input"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"SubmitVideoGenerationInput"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"submitVideoGeneration"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"input"},"value":{"kind":"Variable","name":{"kind":"Name","value":"input"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"task"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"status"}},{"kind":"Field","name":{"kind":"Name","value":"price"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"amount"}}]}}]}}]}}]}}]} as unknown as DocumentNode<SubmitVideoMutation, SubmitVideoMutationVariables>;
export const TaskStatusDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"subscription","name":{"kind":"Name","value":"TaskStatus"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"taskId"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"ID"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"taskStatusChanged"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"taskId"},"value":{"kind":"Variable","name":{"kind":"Name","value":"taskId"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"status"}},{"kind":"Field","name":{"kind":"Name","value":"statusName"}},{"kind":"Field","name":{"kind":"Name","value":"result"}},{"kind":"Field","name":{"kind":"Name","value":"error"}},{"kind":"Field","name":{"kind":"Name","value":"updatedAt"}}]}}]}}]} as unknown as DocumentNode<TaskStatusSubscription, TaskStatusSubscriptionVariables>;