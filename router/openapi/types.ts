/**
 * The subset of OpenAPI 3.1 (https://spec.openapis.org/oas/v3.1.0) the Switchyard documents use,
 * typed so a misspelt field fails `tsc` instead of the validator. Schema Objects are JSON Schema
 * draft 2020-12.
 */

/** A JSON Schema (draft 2020-12) as OpenAPI 3.1 Schema Objects hold it. */
export interface JsonSchema {
  $ref?: string;
  title?: string;
  description?: string;
  type?: JsonType | JsonType[];
  enum?: (string | number | boolean | null)[];
  const?: string | number | boolean | null;
  default?: unknown;
  examples?: unknown[];
  format?: "date-time" | "date" | "uri" | "hostname" | "email";
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  propertyNames?: JsonSchema;
  allOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
}

/** JSON Schema's type names. */
export type JsonType = "object" | "array" | "string" | "number" | "integer" | "boolean" | "null";

/** A reference to a reusable component. */
export interface Reference {
  $ref: string;
  summary?: string;
  description?: string;
}

/** A header of a response. */
export interface Header {
  description?: string;
  required?: boolean;
  schema: JsonSchema;
}

/** A path, query or header parameter. */
export interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  description?: string;
  required?: boolean;
  schema: JsonSchema;
}

/** One media type of a body. */
export interface MediaType {
  schema: JsonSchema;
  examples?: Record<string, { summary?: string; value: unknown }>;
}

/** A request body. */
export interface RequestBody {
  description?: string;
  required?: boolean;
  content: Record<string, MediaType>;
}

/** One response of an operation. */
export interface Response {
  description: string;
  headers?: Record<string, Header | Reference>;
  content?: Record<string, MediaType>;
}

/** One operation (a method on a path). */
export interface Operation {
  operationId: string;
  summary: string;
  description?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  parameters?: (Parameter | Reference)[];
  requestBody?: RequestBody | Reference;
  responses: Record<string, Response | Reference>;
}

/** The operations of one path. */
export interface PathItem {
  get?: Operation;
  post?: Operation;
  parameters?: (Parameter | Reference)[];
}

/** A whole OpenAPI 3.1 document. */
export interface OpenApiDocument {
  openapi: "3.1.0";
  info: { title: string; version: string; description?: string; license?: { name: string; identifier?: string } };
  servers: { url: string; description?: string }[];
  security: Record<string, string[]>[];
  tags?: { name: string; description?: string }[];
  paths: Record<string, PathItem>;
  components: {
    schemas: Record<string, JsonSchema>;
    responses?: Record<string, Response>;
    parameters?: Record<string, Parameter>;
    headers?: Record<string, Header>;
    requestBodies?: Record<string, RequestBody>;
    securitySchemes: Record<string, { type: "http"; scheme: "bearer"; description?: string; bearerFormat?: string }>;
  };
}
