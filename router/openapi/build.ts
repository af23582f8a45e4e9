/**
 * Turns a registry of zod shapes and routes into an OpenAPI 3.1 document
 * (`@asteasolutions/zod-to-openapi`), in the form both documents are served and committed in.
 */
import { OpenAPIRegistry, OpenApiGeneratorV31 } from "@asteasolutions/zod-to-openapi";
import type { OpenApiDocument } from "./types.ts";

export { OpenAPIRegistry };

/** Everything of a document but its paths and components, which the registry gives. */
export type DocumentHead = Omit<OpenApiDocument, "paths" | "components" | "openapi">;

/**
 * A single allowed value as JSON Schema's `const` (the generator writes `enum: [x]`), typed
 * `integer` when it is one; an operation's own parameters before the shared ones; a described reference as `$ref` beside `description`; empty `properties`
 * and unset keys dropped. Same meaning, the form the
 * documents had, so a client's generated code and the contract check see no change.
 */
function tidy(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(tidy);
  if (!node || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) if (value !== undefined) out[key] = tidy(value);
  // The generator writes a described reference as `allOf: [{$ref}, {description}]`; 3.1 allows siblings of `$ref`.
  const all = out.allOf as Record<string, unknown>[] | undefined;
  if (
    all?.length === 2 &&
    typeof all[0]?.$ref === "string" &&
    Object.keys(all[0]).length === 1 &&
    Object.keys(all[1] ?? {}).every((key) => key === "description")
  ) {
    delete out.allOf;
    Object.assign(out, all[0], all[1]);
  }
  // An operation's own parameters (path, query) first, then the shared ones it references.
  if (Array.isArray(out.parameters)) out.parameters = [...out.parameters].sort((a, b) => Number("$ref" in a) - Number("$ref" in b));
  if (out.properties && typeof out.properties === "object" && Object.keys(out.properties).length === 0) delete out.properties;
  if (Array.isArray(out.enum) && out.enum.length === 1 && out.const === undefined) {
    out.const = out.enum[0];
    delete out.enum;
  }
  if (out.type === "number" && ((Number.isInteger(out.const) && out.const !== undefined) || (Array.isArray(out.enum) && out.enum.every(Number.isInteger)))) {
    out.type = "integer";
  }
  return out;
}

/**
 * Generates an OpenAPI 3.1 document from a registry.
 * @param head info, servers, security and tags
 * @returns the document, plain JSON
 */
export function buildDocument(registry: OpenAPIRegistry, head: DocumentHead): OpenApiDocument {
  const generated = new OpenApiGeneratorV31(registry.definitions).generateDocument({ openapi: "3.1.0", ...head } as never);
  const { webhooks: _, paths, components, ...rest } = tidy(JSON.parse(JSON.stringify(generated))) as OpenApiDocument & { webhooks?: unknown };
  // The head first, then paths, then components, each kind in reading order: a diff shows changes, not moves.
  const { securitySchemes, parameters, headers, responses, schemas, ...other } = components;
  return { ...rest, paths, components: { securitySchemes, parameters, headers, responses, schemas, ...other } };
}

/**
 * Registers a component written as plain OpenAPI (a security scheme, a request or response header,
 * an error response built on a registered schema): the parts of a document that are not a body.
 */
export function registerRaw(
  registry: OpenAPIRegistry,
  type: "parameters" | "headers" | "responses" | "securitySchemes",
  name: string,
  component: object,
): void {
  registry.registerComponent(type, name, component as never);
}
