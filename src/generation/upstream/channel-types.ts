/**
 * The channel types (README "Channels"; ADR 0023): which protocol a channel speaks, which
 * credential fields it takes, what it cannot do, and how its adapter is made. Adding a type is one
 * adapter module, one entry here, one fake provider (test/support/providers/<type>.ts) and one
 * entry of the contract suite (test/integration/channel-types.test.ts).
 */
import type { ResultStore } from "./result-store.ts";
import type { GenerationRequest } from "../validation.ts";
import { arkDefaultModel, arkUnsupported, createArkUpstream } from "./ark.ts";
import { createDashScopeUpstream, dashscopeDefaultModel, dashscopeUnsupported } from "./dashscope.ts";
import { createVeoUpstream, veoDefaultModel, veoUnsupported } from "./gemini-veo.ts";
import { createHttpUpstream } from "./http.ts";
import { createMiniMaxUpstream, minimaxDefaultModel, minimaxUnsupported } from "./minimax.ts";
import { createKlingUpstream, klingDefaultModel, klingUnsupported } from "./kling.ts";
import { createOpenAiCompatibleUpstream, openAiDefaultModel, openAiUnsupported } from "./openai-compatible.ts";
import type { GenerationUpstream } from "./types.ts";

/** A credential field of a channel (GraphQL `ChannelInput`, `channels add --<field>-file`). */
export type CredentialField = "apiKey" | "accessKey" | "secretKey";

/** What a type's adapter is made from. */
export interface AdapterSettings {
  baseUrl: string;
  /** The channel's credentials, one per field of {@link ChannelTypeSpec.credentials}. */
  credentials: Readonly<Record<CredentialField, string>>;
  timeoutMs: number;
  /** The provider's model for a request: the channel's mapping, else the type's default. */
  modelFor(request: GenerationRequest): string;
  /** Where results a customer could not fetch are kept (signed `/media/p/...` URLs). */
  results: ResultStore;
}

/** One channel type. */
export interface ChannelTypeSpec {
  id: string;
  /** The credential fields, in the order the console and the CLI ask for them. */
  credentials: readonly CredentialField[];
  /**
   * The request field this type cannot do (refused with 400 `{field} has an unsupported value`
   * before any debit when no channel of the model can), or null.
   */
  unsupported(request: GenerationRequest): string | null;
  /** The provider model sent when the channel maps none; null: our model id is sent (switchyard). */
  defaultModel(request: GenerationRequest): string | null;
  create(settings: AdapterSettings): GenerationUpstream;
}

/** The types, by id. */
export const CHANNEL_TYPES: Readonly<Record<string, ChannelTypeSpec>> = Object.freeze({
  switchyard: {
    id: "switchyard",
    credentials: ["apiKey"],
    unsupported: () => null,
    defaultModel: () => null,
    create: (s) => createHttpUpstream({ baseUrl: s.baseUrl, apiKey: s.credentials.apiKey, timeoutMs: s.timeoutMs }),
  },
  "openai-compatible": {
    id: "openai-compatible",
    credentials: ["apiKey"],
    unsupported: openAiUnsupported,
    defaultModel: openAiDefaultModel,
    create: (s) =>
      createOpenAiCompatibleUpstream({ baseUrl: s.baseUrl, apiKey: s.credentials.apiKey, timeoutMs: s.timeoutMs, modelFor: s.modelFor, results: s.results }),
  },
  kling: {
    id: "kling",
    credentials: ["accessKey", "secretKey"],
    unsupported: klingUnsupported,
    defaultModel: klingDefaultModel,
    create: (s) =>
      createKlingUpstream({
        baseUrl: s.baseUrl,
        accessKey: s.credentials.accessKey,
        secretKey: s.credentials.secretKey,
        timeoutMs: s.timeoutMs,
        modelFor: s.modelFor,
        results: s.results,
      }),
  },
  ark: {
    id: "ark",
    credentials: ["apiKey"],
    unsupported: arkUnsupported,
    defaultModel: arkDefaultModel,
    create: (s) => createArkUpstream({ baseUrl: s.baseUrl, apiKey: s.credentials.apiKey, timeoutMs: s.timeoutMs, modelFor: s.modelFor, results: s.results }),
  },
  dashscope: {
    id: "dashscope",
    credentials: ["apiKey"],
    unsupported: dashscopeUnsupported,
    defaultModel: dashscopeDefaultModel,
    create: (s) =>
      createDashScopeUpstream({ baseUrl: s.baseUrl, apiKey: s.credentials.apiKey, timeoutMs: s.timeoutMs, modelFor: s.modelFor, results: s.results }),
  },
  minimax: {
    id: "minimax",
    credentials: ["apiKey"],
    unsupported: minimaxUnsupported,
    defaultModel: minimaxDefaultModel,
    create: (s) =>
      createMiniMaxUpstream({ baseUrl: s.baseUrl, apiKey: s.credentials.apiKey, timeoutMs: s.timeoutMs, modelFor: s.modelFor, results: s.results }),
  },
  "gemini-veo": {
    id: "gemini-veo",
    credentials: ["apiKey"],
    unsupported: veoUnsupported,
    defaultModel: veoDefaultModel,
    create: (s) => createVeoUpstream({ baseUrl: s.baseUrl, apiKey: s.credentials.apiKey, timeoutMs: s.timeoutMs, modelFor: s.modelFor, results: s.results }),
  },
} satisfies Record<string, ChannelTypeSpec>);

/** The type ids, in the order the docs list them. */
export const CHANNEL_TYPE_IDS: readonly string[] = Object.keys(CHANNEL_TYPES);

/** The type of that id, or undefined. */
export function channelType(id: string): ChannelTypeSpec | undefined {
  return Object.hasOwn(CHANNEL_TYPES, id) ? CHANNEL_TYPES[id] : undefined;
}

/**
 * The stored (sealed) form of a channel's credentials: the plain key for one-key types (as every
 * channel stored before types existed), else a JSON object of the fields.
 */
export function packCredentials(spec: ChannelTypeSpec, credentials: Partial<Record<CredentialField, string>>): string {
  if (spec.credentials.length === 1 && spec.credentials[0] === "apiKey") return credentials.apiKey!;
  return JSON.stringify(Object.fromEntries(spec.credentials.map((f) => [f, credentials[f]])));
}

/** The credentials of an opened sealed value. @throws Error when the value does not hold the type's fields */
export function unpackCredentials(spec: ChannelTypeSpec, plain: string): Record<CredentialField, string> {
  if (spec.credentials.length === 1 && spec.credentials[0] === "apiKey") return { apiKey: plain, accessKey: "", secretKey: "" };
  const parsed = JSON.parse(plain) as Record<string, unknown>;
  const out: Record<CredentialField, string> = { apiKey: "", accessKey: "", secretKey: "" };
  for (const field of spec.credentials) {
    if (typeof parsed[field] !== "string") throw new Error(`the stored credentials lack ${field}`);
    out[field] = parsed[field] as string;
  }
  return out;
}
