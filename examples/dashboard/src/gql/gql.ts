/* eslint-disable */
import * as types from './graphql.js';
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';

/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "\n  query Dashboard($customerId: String!) {\n    viewer {\n      balance { amount }\n      spent { amount }\n      tasks(first: 20) { totalCount nodes { id status result price { amount } model { name } } }\n      orders(first: 20) { nodes { id status amount { amount } product { name vendor { name } } resource { expiresAt } } }\n      customerBalance(customerId: $customerId) { available { amount } creditLine { amount } }\n    }\n  }\n": typeof types.DashboardDocument,
    "\n  mutation SubmitVideo($input: SubmitVideoGenerationInput!) {\n    submitVideoGeneration(input: $input) { task { id status price { amount } } }\n  }\n": typeof types.SubmitVideoDocument,
    "\n  subscription TaskStatus($taskId: ID!) {\n    taskStatusChanged(taskId: $taskId) { id status statusName result error updatedAt }\n  }\n": typeof types.TaskStatusDocument,
};
const documents: Documents = {
    "\n  query Dashboard($customerId: String!) {\n    viewer {\n      balance { amount }\n      spent { amount }\n      tasks(first: 20) { totalCount nodes { id status result price { amount } model { name } } }\n      orders(first: 20) { nodes { id status amount { amount } product { name vendor { name } } resource { expiresAt } } }\n      customerBalance(customerId: $customerId) { available { amount } creditLine { amount } }\n    }\n  }\n": types.DashboardDocument,
    "\n  mutation SubmitVideo($input: SubmitVideoGenerationInput!) {\n    submitVideoGeneration(input: $input) { task { id status price { amount } } }\n  }\n": types.SubmitVideoDocument,
    "\n  subscription TaskStatus($taskId: ID!) {\n    taskStatusChanged(taskId: $taskId) { id status statusName result error updatedAt }\n  }\n": types.TaskStatusDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 *
 *
 * @example
 * ```ts
 * const query = graphql(`query GetUser($id: ID!) { user(id: $id) { name } }`);
 * ```
 *
 * The query argument is unknown!
 * Please regenerate the types.
 */
export function graphql(source: string): unknown;

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Dashboard($customerId: String!) {\n    viewer {\n      balance { amount }\n      spent { amount }\n      tasks(first: 20) { totalCount nodes { id status result price { amount } model { name } } }\n      orders(first: 20) { nodes { id status amount { amount } product { name vendor { name } } resource { expiresAt } } }\n      customerBalance(customerId: $customerId) { available { amount } creditLine { amount } }\n    }\n  }\n"): (typeof documents)["\n  query Dashboard($customerId: String!) {\n    viewer {\n      balance { amount }\n      spent { amount }\n      tasks(first: 20) { totalCount nodes { id status result price { amount } model { name } } }\n      orders(first: 20) { nodes { id status amount { amount } product { name vendor { name } } resource { expiresAt } } }\n      customerBalance(customerId: $customerId) { available { amount } creditLine { amount } }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SubmitVideo($input: SubmitVideoGenerationInput!) {\n    submitVideoGeneration(input: $input) { task { id status price { amount } } }\n  }\n"): (typeof documents)["\n  mutation SubmitVideo($input: SubmitVideoGenerationInput!) {\n    submitVideoGeneration(input: $input) { task { id status price { amount } } }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription TaskStatus($taskId: ID!) {\n    taskStatusChanged(taskId: $taskId) { id status statusName result error updatedAt }\n  }\n"): (typeof documents)["\n  subscription TaskStatus($taskId: ID!) {\n    taskStatusChanged(taskId: $taskId) { id status statusName result error updatedAt }\n  }\n"];

export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}

export type DocumentType<TDocumentNode extends DocumentNode<any, any>> = TDocumentNode extends DocumentNode<  infer TType,  any>  ? TType  : never;