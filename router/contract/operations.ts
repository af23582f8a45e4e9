/**
 * The operations the project itself sends, which a schema change must not break: every document
 * of the trusted-documents manifest (schema/trusted-documents.json: the pages' and the REST
 * shims' operations, issue 21 §3) when it exists, and the REST shims' operations as their
 * modules hold them. Each must parse and pass graphql-js `validate` against the API schema.
 */
import { createHash } from "node:crypto";
import { buildSchema, GraphQLError, parse, validate } from "graphql";
import { OPERATIONS } from "../rest/generation-operations.ts";
import { CLOUD_OPERATIONS } from "../rest/cloud-shapes.ts";

/** Path under the repository of the trusted-documents manifest. */
export const TRUSTED_DOCUMENTS = "schema/trusted-documents.json";

/** An operation and where it comes from. */
export interface NamedOperation {
  /** Where it is: `schema/trusted-documents.json <id>`, `router/rest/generation-operations.ts OPERATIONS.task`. */
  source: string;
  document: string;
}

/** An operation that does not hold against the schema, and why. */
export interface OperationProblem {
  source: string;
  errors: string[];
}

/** The REST shims' operations, from their modules. */
export function shimOperations(): NamedOperation[] {
  return [
    ...Object.entries(OPERATIONS).map(([name, document]) => ({ source: `router/rest/generation-operations.ts OPERATIONS.${name}`, document })),
    ...Object.entries(CLOUD_OPERATIONS).map(([name, document]) => ({ source: `router/rest/cloud-shapes.ts CLOUD_OPERATIONS.${name}`, document })),
  ];
}

/**
 * The operations of a trusted-documents manifest: a JSON object mapping each document's id (the
 * lowercase hex SHA-256 of its text) to the text.
 * @param text the manifest file's text
 * @returns its operations, and a problem for each entry whose id is not its text's hash
 * @throws Error when the text is not such an object
 */
export function manifestOperations(text: string): { operations: NamedOperation[]; problems: OperationProblem[] } {
  const manifest: unknown = JSON.parse(text);
  if (typeof manifest !== "object" || manifest === null || Array.isArray(manifest) || !Object.values(manifest).every((v) => typeof v === "string")) {
    throw new Error(`${TRUSTED_DOCUMENTS} must be a JSON object mapping document ids to document texts`);
  }
  const operations: NamedOperation[] = [];
  const problems: OperationProblem[] = [];
  for (const [id, document] of Object.entries(manifest as Record<string, string>)) {
    const source = `${TRUSTED_DOCUMENTS} ${id}`;
    operations.push({ source, document });
    const hash = createHash("sha256").update(document).digest("hex");
    if (hash !== id) problems.push({ source, errors: [`the id is not the SHA-256 of the document (${hash})`] });
  }
  return { operations, problems };
}

/**
 * The operations that do not parse or do not validate against a schema.
 * @param sdl the API schema
 */
export function invalidOperations(sdl: string, operations: readonly NamedOperation[]): OperationProblem[] {
  const schema = buildSchema(sdl);
  const problems: OperationProblem[] = [];
  for (const { source, document } of operations) {
    let errors: readonly GraphQLError[];
    try {
      errors = validate(schema, parse(document));
    } catch (error) {
      errors = [error instanceof GraphQLError ? error : new GraphQLError(String(error))];
    }
    if (errors.length) problems.push({ source, errors: errors.map((e) => e.message) });
  }
  return problems;
}
