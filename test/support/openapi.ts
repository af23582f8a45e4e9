/**
 * Validating answers against the OpenAPI documents the router serves (router/openapi/): one
 * schema compiler for the conformance tests and the fuzz suites.
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import formatsPlugin from "ajv-formats";
import type { JsonSchema, OpenApiDocument } from "../../router/openapi/types.ts";

const addFormats = ((formatsPlugin as any).default ?? formatsPlugin) as (ajv: Ajv2020) => Ajv2020;

/**
 * Compiles the schemas of one document with ajv (draft 2020-12, formats): the document's
 * `#/components/schemas/X` references become `<urn>#/$defs/X`.
 * @param urn the `$id` the document's components are registered under (one per compiler)
 * @param options `strict: true` also rejects unknown keywords (the documents' own test)
 * @returns `(cacheKey, schema) => validate`, compiling each key once
 */
export function schemaCompiler(doc: OpenApiDocument, urn: string, options: { strict?: boolean } = {}) {
  const ajv = new Ajv2020({ strict: options.strict ?? false, allErrors: true, allowUnionTypes: true });
  addFormats(ajv);
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite);
    if (!node || typeof node !== "object") return node;
    return Object.fromEntries(
      Object.entries(node).map(([key, value]) =>
        key === "$ref" && typeof value === "string" && value.startsWith("#/components/schemas/")
          ? [key, `${urn}#/$defs/${value.slice("#/components/schemas/".length)}`]
          : [key, rewrite(value)],
      ),
    );
  };
  ajv.addSchema({ $id: urn, $defs: rewrite(doc.components.schemas) as Record<string, object> });
  const cache = new Map<string, ValidateFunction>();
  return (key: string, schema: JsonSchema): ValidateFunction => {
    let validate = cache.get(key);
    if (!validate) {
      validate = ajv.compile(rewrite(schema) as object);
      cache.set(key, validate);
    }
    return validate;
  };
}
