/**
 * The project's trusted-documents manifest, schema/trusted-documents.json (issue 21 §3; README
 * "Persisted queries and trusted documents"; ADR 0020): every GraphQL operation the router's own
 * clients send — the pages' scripts (router/pages/*.js: /, /test, /client, /admin), the REST
 * shims (router/rest/*), the router's own checks (router/graph/key-check.ts, /health) — found in
 * their source, so a new operation is in the manifest at the next `npm run compose` with nothing
 * to register by hand.
 *
 * Discovery: every string or template literal in a `.js` or `.ts` file of the repository's code
 * (router/, src/, subgraphs/, bin/ and any new top-level folder; not tests, tools, examples or
 * router/plugins/, which answers requests and sends none) whose text
 * starts with `query`, `mutation`, `subscription` and parses as a GraphQL document with operations
 * (fragments allowed), or starts with `{` and is moreover valid against the API schema (a
 * shorthand query; `{n}`, a translation's placeholder, is not). A template's `${NAME}` parts are resolved when NAME is a
 * module-level `const` of that file holding a literal (TASK_FIELDS, ENTRY); a document with any
 * other dynamic part cannot be known ahead and fails the generation, naming the file and line:
 * write such a document out in full (router/pages/admin-keys.js's top-ups are). The id of each document
 * is the lowercase hex SHA-256 of its exact text, the text the client sends.
 *
 * Reads the TypeScript compiler's parser (a development dependency: `compose` is a development
 * command; the router reads only the JSON).
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { buildSchema, Kind, parse, validate, type GraphQLSchema } from "graphql";
import { sha256Hex } from "../../src/digest.ts";

/**
 * Top-level folders that hold no client of the router: tests, tools, examples (the dashboard
 * example is a third party's client, with documents of its own), data and dependencies. Every
 * other folder is read, so a new one (a console of its own) needs no change here.
 */
const NOT_SOURCES = new Set(["node_modules", "test", "bench", "scripts", "examples", "docs", "schema", "deploy", "data", "coverage"]);

/** Folders that send no operation: the gateway's plugins answer requests (their placeholders are no documents). */
const NOT_CLIENTS = new Set(["router/plugins"]);

/**
 * A text that may be a GraphQL document: starts like one. `{"` starts JSON (a frame written by
 * hand), never a selection set: a field name is not quoted.
 */
const LOOKS_LIKE_DOCUMENT = /^\s*(?:(?:query|mutation|subscription)\b|\{(?!\s*"))/;

/** One document found, and where. */
export interface FoundDocument {
  /** `router/pages/test.js:29`. */
  source: string;
  text: string;
}

/** The files scanned: `.js` and `.ts` of the repository's code (see {@link NOT_SOURCES}, {@link NOT_CLIENTS}), sorted. */
function sourceFiles(root: string): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!NOT_CLIENTS.has(path.relative(root, full).split(path.sep).join("/"))) walk(full);
      } else if (/\.(?:js|ts)$/.test(entry.name) && !entry.name.endsWith(".d.ts")) files.push(full);
    }
  };
  for (const entry of fs.readdirSync(root, { withFileTypes: true })) {
    if (entry.isDirectory() && !entry.name.startsWith(".") && !NOT_SOURCES.has(entry.name)) walk(path.join(root, entry.name));
  }
  return files.sort();
}

/**
 * Whether a text is a document of operations (and fragments); one that starts with `{` must also
 * be valid against `schema`.
 */
function isOperationDocument(text: string, schema: GraphQLSchema): boolean {
  try {
    const document = parse(text);
    const { definitions } = document;
    const operations =
      definitions.some((d) => d.kind === Kind.OPERATION_DEFINITION) &&
      definitions.every((d) => d.kind === Kind.OPERATION_DEFINITION || d.kind === Kind.FRAGMENT_DEFINITION);
    return operations && (!/^\s*\{/.test(text) || validate(schema, document).length === 0);
  } catch {
    return false;
  }
}

/**
 * The documents of one source file.
 * @param file its path; `relative`, its name in the results
 * @throws Error naming the file and line of a document with a part that cannot be resolved
 */
export function documentsInFile(file: string, relative: string, schema: GraphQLSchema): FoundDocument[] {
  const source = ts.createSourceFile(
    file,
    fs.readFileSync(file, "utf8"),
    ts.ScriptTarget.Latest,
    true,
    file.endsWith(".ts") ? ts.ScriptKind.TS : ts.ScriptKind.JS,
  );
  // Module-level constants: their initializers, resolved on use.
  const constants = new Map<string, ts.Expression>();
  for (const statement of source.statements) {
    if (!ts.isVariableStatement(statement) || !(statement.declarationList.flags & ts.NodeFlags.Const)) continue;
    for (const declaration of statement.declarationList.declarations) {
      if (ts.isIdentifier(declaration.name) && declaration.initializer) constants.set(declaration.name.text, declaration.initializer);
    }
  }
  const resolve = (node: ts.Expression, depth = 0): string | undefined => {
    if (depth > 20) return undefined;
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
    if (ts.isIdentifier(node)) {
      const initializer = constants.get(node.text);
      return initializer ? resolve(initializer, depth + 1) : undefined;
    }
    if (ts.isTemplateExpression(node)) {
      let text = node.head.text;
      for (const span of node.templateSpans) {
        const part = resolve(span.expression, depth + 1);
        if (part === undefined) return undefined;
        text += part + span.literal.text;
      }
      return text;
    }
    return undefined;
  };
  const found: FoundDocument[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateExpression(node)) {
      const start = ts.isTemplateExpression(node) ? node.head.text : node.text;
      if (LOOKS_LIKE_DOCUMENT.test(start)) {
        const where = `${relative}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
        const text = resolve(node);
        if (text === undefined) {
          // Only a template that reads like a document with a dynamic part is a problem.
          if (/[{(]/.test(start))
            throw new Error(
              `${where}: a GraphQL document with a part only known at run time; write it out in full (README "Persisted queries and trusted documents")`,
            );
        } else if (isOperationDocument(text, schema)) found.push({ source: where, text });
      }
      return; // a template's parts are not documents of their own
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * Every document of the router's own clients.
 * @param root the repository folder
 * @param apiSdl the API schema (schema/api.graphql as `compose` writes it)
 */
export function discoverDocuments(root: string, apiSdl: string): FoundDocument[] {
  const schema = buildSchema(apiSdl);
  return sourceFiles(root).flatMap((file) => documentsInFile(file, path.relative(root, file).split(path.sep).join("/"), schema));
}

/**
 * The manifest's text: `{ "<sha256>": "<document>" }`, sorted by id, two-space JSON and a final newline.
 * @param apiSdl the API schema
 * @param root the repository (a URL or path; default this checkout)
 */
export function trustedDocumentsText(apiSdl: string, root: URL | string = new URL("../../", import.meta.url)): string {
  const folder = typeof root === "string" ? root : fileURLToPath(root);
  const manifest: Record<string, string> = {};
  for (const { text } of discoverDocuments(folder, apiSdl)) manifest[sha256Hex(text)] = text;
  const sorted = Object.fromEntries(
    Object.keys(manifest)
      .sort()
      .map((id) => [id, manifest[id]]),
  );
  return `${JSON.stringify(sorted, null, 2)}\n`;
}
