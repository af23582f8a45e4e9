/**
 * The trusted-documents manifest (issue 21 §3): how `npm run compose` finds the router's own
 * operations in their source (router/contract/trusted-documents.ts), and how the router reads a
 * manifest at start (router/plugins/usePersistedQueries.manifest.ts), in both formats.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createHash } from "node:crypto";
import { buildSchema } from "graphql";
import { describe, expect, it } from "vitest";
import { documentsInFile } from "../../router/contract/trusted-documents.ts";
import { addManifest, loadTrustedDocuments, ManifestError, PROJECT_MANIFEST, type TrustedDocument } from "../../router/plugins/usePersistedQueries.manifest.ts";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { API_SCHEMA_FILE } from "../../router/compose.ts";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const schema = buildSchema(fs.readFileSync(API_SCHEMA_FILE, "utf8"));

/** The documents found in a page script with this source. */
function scan(source: string) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-td-"));
  const file = path.join(dir, "page.js");
  fs.writeFileSync(file, source);
  return documentsInFile(file, "router/pages/page.js", schema);
}

describe("finding the operations in the source", () => {
  it("resolves a template's module-level constants into the exact text the page sends", () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a page script's source, meant literally
    const found = scan(['const FIELDS = "id name";', "const MODELS = `query M { models { ${FIELDS} } }`;", "gql(MODELS);"].join("\n"));
    expect(found).toEqual([{ source: "router/pages/page.js:2", text: "query M { models { id name } }" }]);
  });

  it("takes a shorthand query only when it is valid against the API schema (a translation's {n} is not one)", () => {
    const found = scan('const a = "{n}"; const b = `{ models { id } }`; const c = "{ count } items";');
    expect(found.map((d) => d.text)).toEqual(["{ models { id } }"]);
  });

  it("fails, naming the file and line, on a document with a part known only at run time", () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a page script's source, meant literally
    expect(() => scan("const run = (field) => gql(`mutation($input: X!) {\n ${field}(input: $input) { id } }`);")).toThrow(
      /^router\/pages\/page\.js:1: a GraphQL document with a part only known at run time/,
    );
  });

  it('takes a JSON text written by hand (a frame starting {") for no document, even with run-time parts', () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a page script's source, meant literally
    expect(scan('const frame = (id, payload) => `{"id":${JSON.stringify(id)},"type":"next","payload":${payload}}`;')).toEqual([]);
  });

  it("finds every page's and REST shim's operation in the committed manifest", () => {
    const manifest = JSON.parse(fs.readFileSync(PROJECT_MANIFEST, "utf8")) as Record<string, string>;
    const names = Object.values(manifest).map((text) => /^\s*(?:query|mutation|subscription)\s+(\w+)/.exec(text)?.[1]);
    for (const name of [
      "PageViewer",
      "PageTaskChanges",
      "PageModels",
      "PageQuote",
      "PageSubmitVideo",
      "PageWatchTask",
      "RestUsage",
      "RestCloudAuth",
      "KeyCheck",
    ]) {
      expect(names, name).toContain(name);
    }
    for (const [id, text] of Object.entries(manifest)) expect(sha256(text)).toBe(id);
  });
});

describe("reading a manifest", () => {
  const document = "query One { models { id } }";

  it("reads Switchyard's (and Hive's) id → document object, and refuses an id that is not the document's hash", () => {
    const into = new Map<string, TrustedDocument>();
    addManifest(into, JSON.stringify({ [sha256(document)]: document }), "m.json");
    expect(into.get(sha256(document))?.text).toBe(document);
    expect(() => addManifest(new Map(), JSON.stringify({ [sha256("other")]: document }), "m.json")).toThrow(ManifestError);
  });

  it("reads Apollo's persisted query manifest, by its id and by the document's hash", () => {
    const into = new Map<string, TrustedDocument>();
    const manifest = { format: "apollo-persisted-query-manifest", version: 1, operations: [{ id: "custom-id", name: "One", type: "query", body: document }] };
    addManifest(into, JSON.stringify(manifest), "apollo.json");
    expect(into.get("custom-id")?.text).toBe(document);
    expect(into.get(sha256(document))?.text).toBe(document);
  });

  it("stops the start in one line (a ConfigError) on a file that is missing, not a manifest, or holds a document that does not parse", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-td-"));
    const write = (name: string, text: string) => {
      fs.writeFileSync(path.join(dir, name), text);
      return path.join(dir, name);
    };
    expect(() => loadTrustedDocuments(path.join(dir, "missing.json"))).toThrow(/^PERSISTED_DOCUMENTS .*missing\.json: cannot be read \(ENOENT\)$/);
    expect(() => loadTrustedDocuments(write("list.json", "[1, 2]"))).toThrow(ConfigError);
    expect(() => loadTrustedDocuments(write("bad.json", JSON.stringify({ [sha256("query {")]: "query {" })))).toThrow(/does not parse/);
    expect(loadTrustedDocuments(write("good.json", JSON.stringify({ [sha256(document)]: document }))).get(sha256(document))?.text).toBe(document);
  });

  it("takes PERSISTED_ONLY as true or false (1 or 0), off when unset, and refuses anything else", () => {
    expect(loadConfig({}).persistedOnly).toBe(false);
    expect(loadConfig({ PERSISTED_ONLY: "true" }).persistedOnly).toBe(true);
    expect(loadConfig({ PERSISTED_ONLY: "0", NODE_ENV: "production" }).persistedOnly).toBe(false);
    expect(() => loadConfig({ PERSISTED_ONLY: "yes" })).toThrow(/PERSISTED_ONLY: must be true or false/);
  });
});
