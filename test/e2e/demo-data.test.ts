/**
 * Demo data and `switchyard start` in production (issue 20 finding 4; README "Demo data"): on an
 * empty database a production start creates no key and no catalog and prints nothing key-shaped;
 * `--demo` (or SEED_DEMO=1) seeds both, and the key never reaches stdout, the log stream.
 * Real CLI processes on SQLite databases of their own.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openDb } from "../../src/db/index.ts";
import { startCli, type RunningProcess } from "../support/process.ts";

/** Anything shaped like a key or a webhook secret of ours. */
const SECRET = /sy_[A-Za-z0-9_-]{8,}|whsec_[0-9a-f]{8,}/;

/** A loaded two-core machine can take most of a minute to start the stack. */
const START_MS = 90_000;
const dirs: string[] = [];
const running: RunningProcess[] = [];
/** Starts `switchyard` and remembers the process, so a failed test leaves none behind. */
function cli(args: string[], env: Record<string, string>): RunningProcess {
  const proc = startCli(args, env);
  running.push(proc);
  return proc;
}
function emptyDatabase() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-demo-"));
  dirs.push(dataDir);
  return { DATA_DIR: dataDir, PORT: "0", GENERATION_PORT: "0", CLOUD_PORT: "0", LOG_LEVEL: "info", NODE_ENV: "production" };
}
afterAll(async () => {
  for (const proc of running) await proc.stop("SIGKILL");
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

/** Rows of the tables the demo data fills. */
async function rows(dataDir: string) {
  const db = openDb({ dataDir });
  try {
    const count = async (table: string) => Number((await db(table).count({ n: "*" }))[0]!.n);
    return { keys: await count("api_keys"), vendors: await count("vendors"), products: await count("products"), names: await db("api_keys").pluck("name") };
  } finally {
    await db.destroy();
  }
}

describe("demo data in production", () => {
  it("is not made by a plain start on an empty database, and nothing key-shaped is printed; SEED_DEMO=1 on a later start makes it", {
    timeout: 3 * START_MS,
  }, async () => {
    const env = emptyDatabase();
    const plain = cli(["start"], env);
    await plain.waitFor(/"event":"ready"/, START_MS);
    expect(plain.output()).not.toMatch(SECRET);
    expect(plain.output()).not.toMatch(/Demo API key/);
    expect(plain.stderr()).toContain("no API key yet: `switchyard keys create --name NAME --balance YUAN` makes one");
    expect(await plain.stop("SIGTERM")).toBe(0);
    expect(await rows(env.DATA_DIR)).toMatchObject({ keys: 0, vendors: 0, products: 0 });

    const asked = cli(["start"], { ...env, SEED_DEMO: "1" });
    const [, key] = await asked.waitFor(/Demo API key \(100\.00 CNY, shown once\): (sy_\S+) \(id key_\w+\)/, START_MS);
    await asked.waitFor(/"event":"ready"/);
    expect(asked.stdout()).not.toMatch(SECRET);
    expect(asked.stderr()).toContain(key);
    expect(await asked.stop("SIGTERM")).toBe(0);
    expect(await rows(env.DATA_DIR)).toMatchObject({ keys: 1, vendors: 2, products: 4, names: ["demo"] });
  });

  it("is made by `start --demo`: the key is printed once on stderr, never on stdout (the JSON log stream), and it works", {
    timeout: 2 * START_MS,
  }, async () => {
    const env = emptyDatabase();
    const demo = cli(["start", "--demo"], env);
    const [, url] = await demo.waitFor(/Switchyard router:\s+(http:\/\/\S+)/, START_MS);
    const [, key] = await demo.waitFor(/Demo API key \(100\.00 CNY, shown once\): (sy_\S+) \(id key_\w+\)/);
    await demo.waitFor(/"event":"ready"/);
    // stdout: the banner (addresses only), then JSON lines; the key is on stderr alone.
    expect(demo.stdout()).not.toMatch(SECRET);
    expect(demo.stdout()).not.toMatch(/Demo API key/);
    for (const line of demo
      .stdout()
      .split("\n")
      .filter((l) => l.startsWith("{")))
      expect(() => JSON.parse(line)).not.toThrow();
    expect(demo.stderr().match(new RegExp(key!, "g"))).toHaveLength(1);
    const vendors = await fetch(`${url}/openapi/v1/vendors`, { headers: { authorization: `Bearer ${key}` } });
    expect(vendors.status).toBe(200);
    expect((await vendors.json()).data.items.map((v: any) => v.vendor_id)).toEqual(expect.arrayContaining(["vnd_nimbus", "vnd_stratus"]));
    expect(demo.stdout()).not.toMatch(SECRET); // not in the request's log line either
    expect(await demo.stop("SIGTERM")).toBe(0);
    expect(await rows(env.DATA_DIR)).toMatchObject({ keys: 1, vendors: 2, products: 4, names: ["demo"] });
  });
});
