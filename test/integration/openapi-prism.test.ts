/**
 * Prism (`@stoplight/prism-cli`) in proxy mode in front of a running router checks real answers
 * against the generated documents (docs/adr/0025-rest-shapes.md). Both documents once declared
 * `jsonSchemaDialect`, and Prism 5 then skipped response validation without a word: these tests
 * show it reports a response violation again, and that the served answers have none.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cloudOpenApi, generationOpenApi } from "../../router/openapi/index.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

const PRISM = fileURLToPath(new URL("../../node_modules/.bin/prism", import.meta.url));

/** A Prism proxy of one document in front of the stack, listening on a port of its own. */
interface Proxy {
  url: string;
  close(): Promise<void>;
}

let t: TestStack;
let folder: string;
const proxies: ChildProcess[] = [];

/** Starts `prism proxy` for a document and resolves once it prints the address it listens on. */
async function startProxy(name: string, document: object): Promise<Proxy> {
  const file = path.join(folder, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify(document));
  const child = spawn(PRISM, ["proxy", file, t.url, "--host", "127.0.0.1", "-p", "0"], { stdio: ["ignore", "pipe", "pipe"] });
  proxies.push(child);
  let output = "";
  const url = await new Promise<string>((resolve, reject) => {
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const found = /Prism is listening on (http:\/\/\S+)/.exec(output);
      if (found) resolve(found[1]!);
    };
    child.stdout!.on("data", read);
    child.stderr!.on("data", read);
    child.once("exit", (code) => reject(new Error(`prism exited (${code}): ${output}`)));
  });
  return {
    url,
    close: async () => {
      if (child.exitCode !== null) return;
      child.kill();
      await once(child, "exit");
    },
  };
}

/** The violations Prism reports for one answer (its `sl-violations` header), as messages. */
async function violations(
  proxy: Proxy,
  method: string,
  urlPath: string,
  init: { key?: string; body?: unknown } = {},
): Promise<{ status: number; found: string[] }> {
  const headers: Record<string, string> = {};
  if (init.key) headers.authorization = `Bearer ${init.key}`;
  if (init.body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(`${proxy.url}${urlPath}`, { method, headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) });
  await response.arrayBuffer();
  const header = response.headers.get("sl-violations");
  const found = header ? (JSON.parse(header) as { location: string[]; message: string }[]) : [];
  return { status: response.status, found: found.filter((v) => v.location[0] === "response").map((v) => `${v.location.join(".")}: ${v.message}`) };
}

beforeAll(async () => {
  folder = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-prism-"));
  t = await startTestStack();
}, 60_000);
afterAll(async () => {
  for (const child of proxies) if (child.exitCode === null) child.kill();
  await t?.close();
  fs.rmSync(folder, { recursive: true, force: true });
});

describe("Prism in proxy mode in front of the router", () => {
  it("finds no response violation in real answers of either document, errors included", async () => {
    const { key } = await t.createKey("10");
    const generation = await startProxy("generation", generationOpenApi);
    const cloud = await startProxy("cloud", cloudOpenApi);
    try {
      const answers = [
        await violations(generation, "GET", "/health"),
        await violations(generation, "GET", "/api/v1/usage?limit=2", { key }),
        await violations(generation, "GET", "/api/v1/tasks/task_unknown", { key }),
        await violations(generation, "POST", "/api/v1/video/generations", { key, body: { prompt: 5 } }),
        await violations(cloud, "GET", "/openapi/v1/vendors?limit=2", { key }),
        await violations(cloud, "GET", "/openapi/v1/orders/ord_unknown", { key }),
      ];
      expect(answers.map((a) => a.status)).toEqual([200, 200, 404, 400, 200, 404]);
      expect(answers.flatMap((a) => a.found)).toEqual([]);
    } finally {
      await generation.close();
      await cloud.close();
    }
  }, 60_000);

  it("reports a response that breaks the document, which it did not while the document declared jsonSchemaDialect", async () => {
    // The same document, with `/health`'s `status` made a value the router never answers.
    const broken = structuredClone(generationOpenApi) as any;
    broken.components.schemas.Health.properties.status.const = "healthy";
    const strict = await startProxy("broken", broken);
    const silent = await startProxy("broken-dialect", { ...broken, jsonSchemaDialect: "https://spec.openapis.org/oas/3.1/dialect/base" });
    try {
      expect((await violations(strict, "GET", "/health")).found).toEqual(["response.body.status: Response body property status must be equal to constant"]);
      expect((await violations(silent, "GET", "/health")).found).toEqual([]);
    } finally {
      await strict.close();
      await silent.close();
    }
  }, 60_000);
});
