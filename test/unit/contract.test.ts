/**
 * The contract check (`npm run check:contract`, issue 21 §5; router/contract/): a breaking change
 * of the API schema or of an OpenAPI document since the release baseline fails it, naming the
 * coordinate, until CHANGELOG.md's Unreleased section names it with a migration note; every
 * trusted document and REST shim operation must still validate; a release moves the baseline.
 * Each test works on a copy of the repository's contract files, changed as a commit would.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { announcedCoordinates } from "../../router/contract/changelog.ts";
import { openApiChanges } from "../../router/contract/changes.ts";
import { checkContract, formatReport, loadContractInputs } from "../../router/contract/check.ts";
import { OPENAPI_DOCUMENTS, PRODUCED, RELEASED, REPOSITORY, writeProducedFiles } from "../../router/contract/files.ts";
import { releaseContract } from "../../router/contract/release.ts";
import { SUBGRAPHS } from "../../router/subgraphs.ts";

const run = promisify(execFile);
const copies: string[] = [];
afterEach(() => {
  for (const dir of copies.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A copy of what the check reads: the subgraph SDL, schema/ (produced files, baseline), docs/api/openapi/, CHANGELOG.md. */
function copyRepository(): URL {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-contract-"));
  copies.push(dir);
  const root = pathToFileURL(`${dir}/`);
  for (const part of ["schema/", "docs/api/openapi/", ...SUBGRAPHS.map((s) => s.schemaFile)])
    fs.cpSync(new URL(part, REPOSITORY), new URL(part, root), { recursive: true });
  fs.copyFileSync(new URL("CHANGELOG.md", REPOSITORY), new URL("CHANGELOG.md", root));
  return root;
}

/** Removes `Task.prompt` from the generation subgraph and runs `npm run compose`, as one commit would. */
function removeTaskPrompt(root: URL): void {
  const file = new URL("subgraphs/generation/schema.graphql", root);
  const sdl = fs.readFileSync(file, "utf8");
  const changed = sdl.replace('  "The prompt as submitted."\n  prompt: String!\n', "");
  expect(changed).not.toBe(sdl);
  fs.writeFileSync(file, changed);
  writeProducedFiles(root);
}

/** Adds an Unreleased entry to the copy's CHANGELOG.md. */
function addEntry(root: URL, entry: string): void {
  const file = new URL("CHANGELOG.md", root);
  fs.writeFileSync(file, fs.readFileSync(file, "utf8").replace("## [Unreleased]\n", `## [Unreleased]\n\n### Removed\n\n${entry}\n`));
}

const PROMPT_ENTRY = "- `Task.prompt` is gone.\n  - *Migration*: keep the prompt you submitted.";

/** Runs `npm run check:contract` on a copy, as `npm test` runs it. */
async function checkProcess(root: URL): Promise<{ code: number; stdout: string }> {
  try {
    const { stdout } = await run(process.execPath, ["--import", "tsx", "scripts/contract.ts", "check", "--root", fileURLToPath(root)], {
      cwd: fileURLToPath(REPOSITORY),
    });
    return { code: 0, stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string };
    return { code: failed.code, stdout: failed.stdout };
  }
}

describe("npm run check:contract", () => {
  it("passes on the repository: every breaking change since the baseline release is in CHANGELOG.md; dangerous ones are printed", async () => {
    const report = await checkContract(loadContractInputs());
    const text = formatReport(report);
    expect(report.unannounced).toEqual([]);
    expect(report.stale).toEqual([]);
    expect(report.invalid).toEqual([]);
    expect(report.ok).toBe(true);
    // Issue 21 §1 against 0.1.0: timestamps became DateTime, inputs required, defaults written.
    expect(text).toMatch(/breaking, in CHANGELOG {2}Task\.createdAt: Field 'Task\.createdAt' changed type from 'String!' to 'DateTime!'/);
    expect(text).toMatch(/dangerous {2}SubmitVideoGenerationInput\.modelId: .*default value/);
    expect(text).toMatch(/Contract check passed\.$/);
  });

  it("fails naming the field when a commit removes a field and regenerates schema/api.graphql, and passes once CHANGELOG.md announces it with a migration note", async () => {
    const root = copyRepository();
    removeTaskPrompt(root);
    const failed = await checkProcess(root);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/BREAKING, NOT IN CHANGELOG {2}Task\.prompt: Field 'prompt' .*removed/);
    expect(failed.stdout).toMatch(/FAIL {2}1 breaking change\(s\) not in CHANGELOG\.md; .*`Task\.prompt`/);
    expect(failed.stdout).toMatch(/Contract check failed\.\n$/);

    addEntry(root, PROMPT_ENTRY);
    const passed = await checkProcess(root);
    expect(passed.stdout).toMatch(/breaking, in CHANGELOG {2}Task\.prompt: /);
    expect(passed.code).toBe(0);
  }, 120_000);

  it("does not count an entry without a migration note, nor one under a released version", async () => {
    const root = copyRepository();
    removeTaskPrompt(root);
    addEntry(root, "- `Task.prompt` is gone.");
    expect((await checkContract(loadContractInputs(root))).unannounced.map((c) => c.coordinate)).toEqual(["Task.prompt"]);

    const changelog = fs.readFileSync(new URL("CHANGELOG.md", REPOSITORY), "utf8");
    const released = `${changelog}\n## [0.0.9] - 2026-01-01\n\n${PROMPT_ENTRY}\n`;
    expect(announcedCoordinates(released).has("Task.prompt")).toBe(false);
    expect(announcedCoordinates(released).has("Task.createdAt")).toBe(true);
  }, 60_000);

  it("fails when a committed produced file is stale, naming it", async () => {
    const root = copyRepository();
    fs.appendFileSync(new URL(PRODUCED.api, root), "\n");
    const report = await checkContract(loadContractInputs(root));
    expect(report.stale).toEqual([PRODUCED.api]);
    expect(formatReport(report)).toContain("STALE  schema/api.graphql is not what the code produces: run `npm run compose`");
    expect(report.ok).toBe(false);
  }, 60_000);

  it("fails naming the REST coordinate when an answer loses a property the release had, until CHANGELOG.md announces it", async () => {
    const inputs = loadContractInputs();
    const released = structuredClone(inputs.released.openapi.generation) as {
      components: { schemas: Record<string, { required: string[]; properties: object }> };
    };
    const task = released.components.schemas.Task!;
    task.required.push("legacy");
    task.properties = { ...task.properties, legacy: { type: "string" } };
    inputs.released.openapi.generation = released;
    const report = await checkContract(inputs);
    expect(report.unannounced.map((c) => c.coordinate).sort()).toEqual([
      "GET /api/v1/tasks/{task_id} response 200 data.legacy",
      "GET /api/v1/usage response 200 data.tasks[].legacy",
    ]);
    expect(formatReport(report)).toMatch(/BREAKING, NOT IN CHANGELOG {2}GET \/api\/v1\/tasks\/\{task_id\} response 200 data\.legacy: \[Removed\]/);

    inputs.changelog = inputs.changelog.replace(
      "## [Unreleased]\n",
      "## [Unreleased]\n\n- `GET /api/v1/tasks/{task_id} response 200 data.legacy` and\n  `GET /api/v1/usage response 200 data.tasks[].legacy` are gone.\n  - *Migration*: read `status`.\n",
    );
    expect((await checkContract(inputs)).ok).toBe(true);
  }, 60_000);

  it("names request fields, parameters, statuses and operations of an OpenAPI document", () => {
    const before = OPENAPI_DOCUMENTS.generation;
    const after = structuredClone(before) as any;
    after.components.schemas.VideoGenerationRequest.required.push("seconds");
    after.paths["/api/v1/usage"].get.parameters[0].required = true;
    delete after.paths["/api/v1/tasks/{task_id}"].get.responses["404"];
    delete after.paths["/api/v1/images/generations"];
    const breaking = openApiChanges("generation", before, after)
      .filter((c) => c.level === "breaking")
      .map((c) => c.coordinate)
      .sort();
    expect(breaking).toEqual([
      "GET /api/v1/tasks/{task_id} response 404",
      "GET /api/v1/usage query limit",
      "POST /api/v1/images/generations",
      "POST /api/v1/video/generations request seconds",
    ]);
  });

  it("validates every trusted document and REST shim operation against the new schema, naming each that broke", async () => {
    const root = copyRepository();
    const documents = ["query TaskPrompt($id: ID!) { task(id: $id) { id prompt } }", "query Models { models { id name } }"];
    const manifest = Object.fromEntries(documents.map((d) => [createHash("sha256").update(d).digest("hex"), d]));
    manifest["0".repeat(64)] = "query Balance { viewer { balance { amount } } }";
    removeTaskPrompt(root);
    // After compose (which writes the project's own manifest): a manifest holding documents that broke.
    fs.writeFileSync(new URL("schema/trusted-documents.json", root), JSON.stringify(manifest));
    addEntry(root, PROMPT_ENTRY);
    const report = await checkContract(loadContractInputs(root));
    const promptId = createHash("sha256").update(documents[0]!).digest("hex");
    expect(report.invalid).toEqual([
      { source: `schema/trusted-documents.json ${"0".repeat(64)}`, errors: [expect.stringMatching(/^the id is not the SHA-256 of the document/)] },
      { source: `schema/trusted-documents.json ${promptId}`, errors: ['Cannot query field "prompt" on type "Task".'] },
    ]);
    // The REST shims' 24 operations are checked too, and hold.
    expect(report.operationCount).toBe(3 + 24);
    expect(formatReport(report)).toContain(`INVALID  schema/trusted-documents.json ${promptId}: Cannot query field "prompt" on type "Task".`);
    expect(report.ok).toBe(false);
  }, 60_000);
});

describe("npm run contract:release -- VERSION", () => {
  it("makes the current contract the baseline and moves the Unreleased entries under the version", async () => {
    const root = copyRepository();
    const written = await releaseContract("0.2.0", root, "2026-12-01");
    expect(written).toContain(RELEASED.api);
    expect(fs.readFileSync(new URL(RELEASED.api, root), "utf8")).toBe(fs.readFileSync(new URL(PRODUCED.api, root), "utf8"));
    expect(fs.readFileSync(new URL(RELEASED.version, root), "utf8")).toBe("0.2.0\n");
    const changelog = fs.readFileSync(new URL("CHANGELOG.md", root), "utf8");
    expect(changelog).toMatch(/## \[Unreleased\]\n\n## \[0\.2\.0\] - 2026-12-01\n\n### Added\n/);
    const report = await checkContract(loadContractInputs(root));
    expect(report.changes).toEqual([]);
    expect(report.ok).toBe(true);

    // After the release, a new breaking change needs a new entry: the 0.2.0 ones no longer count.
    removeTaskPrompt(root);
    expect((await checkContract(loadContractInputs(root))).unannounced.map((c) => c.coordinate)).toEqual(["Task.prompt"]);
  }, 60_000);

  it("refuses while the check fails, and writes nothing", async () => {
    const root = copyRepository();
    removeTaskPrompt(root);
    const before = fs.readFileSync(new URL(RELEASED.api, root), "utf8");
    await expect(releaseContract("0.2.0", root)).rejects.toThrow(/the contract check fails[\s\S]*`Task\.prompt`/);
    expect(fs.readFileSync(new URL(RELEASED.api, root), "utf8")).toBe(before);
    await expect(releaseContract("next", root)).rejects.toThrow(/version must be semver/);
  }, 60_000);
});
