/**
 * What `switchyard start` prints on stdout as an operator sees it: JSON lines when stdout is not
 * a terminal (a collector), human-readable lines with LOG_FORMAT=pretty; either way one line
 * per request with the route, operation, key id, status and duration.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startCli } from "../support/process.ts";

describe("the logs of `switchyard start`", () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-logs-"));
  const env = { DATA_DIR: dataDir, PORT: "0", GENERATION_PORT: "0", CLOUD_PORT: "0", LOG_LEVEL: "info" };
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it("are JSON lines on a pipe, then human-readable with LOG_FORMAT=pretty, each with the request line's fields", { timeout: 90_000 }, async () => {
    const first = startCli(["start"], env);
    const [, url] = await first.waitFor(/Switchyard router:\s+(http:\/\/\S+)/);
    const [, key] = await first.waitFor(/Demo API key[^:]*: (sy_\S+)/);
    const answer = await fetch(`${url}/api/v1/tasks/task_nothere`, { headers: { authorization: `Bearer ${key}`, "x-request-id": "e2e-json-1" } });
    expect(answer.status).toBe(404);
    const [jsonLine] = await first.waitFor(/^\{.*"request_id":"e2e-json-1".*\}$/m);
    const line = JSON.parse(jsonLine);
    expect(line).toMatchObject({ msg: "request", route: "/api/v1/tasks/:task_id", operation_name: "RestTask", status: 404 });
    expect(line.key_id).toMatch(/^key_/);
    expect(Number.isInteger(line.duration_ms)).toBe(true);
    expect(await first.stop("SIGTERM")).toBe(0);

    const second = startCli(["start"], { ...env, LOG_FORMAT: "pretty" });
    const [, url2] = await second.waitFor(/Switchyard router:\s+(http:\/\/\S+)/);
    await fetch(`${url2}/api/v1/tasks/task_nothere`, { headers: { authorization: `Bearer ${key}`, "x-request-id": "e2e-pretty-1" } });
    const [prettyLine] = await second.waitFor(/^.*INFO.*request.*"request_id":"e2e-pretty-1".*$/m);
    expect(prettyLine).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO.*: request \{/);
    expect(prettyLine).toContain('"route":"/api/v1/tasks/:task_id"');
    expect(prettyLine).toContain('"operation_name":"RestTask"');
    expect(prettyLine).toMatch(/"key_id":"key_\w+"/);
    expect(await second.stop("SIGTERM")).toBe(0);
  });
});
