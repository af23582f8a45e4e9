/**
 * Trusted documents (README "Persisted queries and trusted documents", ADR 0020): the manifests of
 * operations the router knows by id, loaded once at start and parsed once.
 *
 * Two formats are read:
 * - Switchyard's and Hive's: a JSON object mapping each document's id, the lowercase hex SHA-256
 *   of its text, to the text (schema/trusted-documents.json, written by `npm run compose`);
 * - Apollo's persisted query list manifest:
 *   `{"format": "apollo-persisted-query-manifest", "version": 1, "operations": [{id, name, type, body}]}`.
 *
 * The project's own manifest (the pages' and REST shims' operations) is always loaded, so the
 * router's own clients keep working with `PERSISTED_ONLY=true`; `PERSISTED_DOCUMENTS` names one
 * more file, the operations of the deployment's own clients.
 */
import fs from "node:fs";
import { fileURLToPath } from "node:url";
import { parse, type DocumentNode } from "graphql";
import { sha256Hex } from "../../src/digest.ts";
import { ConfigError } from "../../src/errors.ts";

/** The project's manifest (schema/trusted-documents.json), always loaded. */
export const PROJECT_MANIFEST = fileURLToPath(new URL("../../schema/trusted-documents.json", import.meta.url));

/** One trusted document: its text and its parsed form (parsed at start: a manifest that does not parse fails the start). */
export interface TrustedDocument {
  text: string;
  document: DocumentNode;
}

/** Trusted documents by id; every document is also found by the SHA-256 of its text. */
export type TrustedDocuments = ReadonlyMap<string, TrustedDocument>;

/** A manifest that cannot be used: names the file and the entry; stops the start in one line (a ConfigError). */
export class ManifestError extends ConfigError {
  constructor(message: string) {
    super(message);
    this.name = "ManifestError";
  }
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** The id → text entries of a manifest in either format. @throws ManifestError when it is neither */
function entriesOf(manifest: unknown, source: string): [string, string][] {
  if (isObject(manifest) && manifest.format === "apollo-persisted-query-manifest") {
    if (manifest.version !== 1 || !Array.isArray(manifest.operations)) {
      throw new ManifestError(`${source}: an Apollo persisted query manifest must have version 1 and an operations array`);
    }
    return manifest.operations.map((operation: unknown, i) => {
      if (!isObject(operation) || typeof operation.id !== "string" || typeof operation.body !== "string") {
        throw new ManifestError(`${source}: operations[${i}] must have a string id and body`);
      }
      return [operation.id, operation.body];
    });
  }
  if (!isObject(manifest) || !Object.values(manifest).every((value) => typeof value === "string")) {
    throw new ManifestError(`${source}: must be a JSON object mapping document ids to document texts, or an Apollo persisted query manifest`);
  }
  return Object.entries(manifest as Record<string, string>);
}

/**
 * Reads one manifest's text into `into`.
 * @param text the file's text (either format)
 * @param source the file's name, for the errors
 * @throws ManifestError when the text is not a manifest, a Switchyard/Hive id is not the SHA-256 of
 *   its document, or a document does not parse
 */
export function addManifest(into: Map<string, TrustedDocument>, text: string, source: string): void {
  let manifest: unknown;
  try {
    manifest = JSON.parse(text);
  } catch {
    throw new ManifestError(`${source}: not JSON`);
  }
  const apollo = isObject(manifest) && manifest.format === "apollo-persisted-query-manifest";
  for (const [id, body] of entriesOf(manifest, source)) {
    const hash = sha256Hex(body);
    // Apollo's ids are its generator's choice (SHA-256 by default); ours and Hive's are the hash.
    if (!apollo && id !== hash) throw new ManifestError(`${source}: the id ${id} is not the SHA-256 of its document (${hash})`);
    let document: DocumentNode;
    try {
      document = parse(body);
    } catch (error) {
      throw new ManifestError(`${source}: the document ${id} does not parse: ${(error as Error).message}`);
    }
    const trusted = { text: body, document };
    into.set(id, trusted);
    into.set(hash, trusted);
  }
}

/**
 * Loads the project's manifest and, if given, one more (PERSISTED_DOCUMENTS).
 * @param file path of the deployment's manifest, or undefined
 * @throws ManifestError when a file cannot be read or used
 */
export function loadTrustedDocuments(file?: string): TrustedDocuments {
  const documents = new Map<string, TrustedDocument>();
  for (const [path, source] of [[PROJECT_MANIFEST, PROJECT_MANIFEST], ...(file ? [[file, `PERSISTED_DOCUMENTS ${file}`]] : [])]) {
    let text: string;
    try {
      text = fs.readFileSync(path!, "utf8");
    } catch (error) {
      throw new ManifestError(`${source}: cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
    }
    addManifest(documents, text, source!);
  }
  return documents;
}
