/**
 * The write scenario's database side alone (bench/README.md "What moved the numbers"): CPU per
 * submission of `GenerationService.submit` (the debit's group commit, then `markSent`'s) with an
 * upstream that answers at once, 32 in flight, on a fresh SQLite database; no HTTP, GraphQL or
 * key check. CPU time of this process, so it moves far less than req/s on a shared machine.
 * Usage: `node --import tsx bench/write-isolated.ts [submissions=4000]`.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { migrate, openDb } from "../src/db/index.ts";
import { createKey } from "../src/auth/keys.ts";
import type { Caller } from "../src/auth/caller.ts";
import { createGenerationService } from "../src/generation/tasks/index.ts";
import type { GenerationUpstream } from "../src/generation/upstream/types.ts";

const total = Number(process.argv[2] ?? 4000);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-write-isolated-"));
const db = openDb({ databaseUrl: undefined, dataDir });
try {
  await migrate(db);
  const key = await createKey(db, { name: "write-isolated", balance: 50_000_000_000 });
  const caller: Caller = {
    keyId: key.id,
    accountId: key.account_id,
    scopes: ["generation"],
    allowIps: null,
    rateLimit: null,
    requireSignature: false,
    signingSecret: null,
  };
  let sent = 0;
  const upstream: GenerationUpstream = {
    name: "instant",
    submit: async () => ({ upstreamTaskId: `up_${sent++}` }),
    fetchStatus: async () => ({ status: 0 }),
  };
  const service = createGenerationService({ db, upstream, checkUrl: async () => true, pollIntervalMs: 3000 });
  const run = async (count: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next++ < count) await service.submit(caller, "video", { prompt: "bench write", modelId: 52, seconds: 5 });
      }),
    );
  };
  await run(1000); // warm-up: compiled code, prepared statements
  const cpu = process.cpuUsage();
  const started = performance.now();
  await run(total);
  const used = process.cpuUsage(cpu);
  const seconds = (performance.now() - started) / 1000;
  console.log(`${total} submissions: ${((used.user + used.system) / 1000 / total).toFixed(3)} CPU ms each, ${Math.round(total / seconds)}/s`);
} finally {
  await db.destroy();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
