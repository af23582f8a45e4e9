/**
 * Properties of trust at the edges (README "Security model"): whatever headers a client sends,
 * and whatever mix of aliases a mutation holds, rate limits, allow-lists and charges stay as
 * documented. Seeded like the other fuzz suites (`FUZZ_SEED`, `FUZZ_RUNS`).
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, waitUntil, type TestStack } from "../support/stack.ts";
import { checkProperty, PROPERTY_TIMEOUT_MS, snapshot, expectNoWrites } from "./support.ts";
import { verifyLedger } from "../../src/ledger/index.ts";

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack();
});
afterAll(() => t?.close());

/** Header names a client might use to speak for the router, a proxy or another request. */
const SPOOFED_NAMES = [
  "x-request-id",
  "x-switchyard-client-ip",
  "x-switchyard-count-id",
  "x-switchyard-route",
  "x-switchyard-route-status",
  "x-switchyard-method",
  "x-switchyard-path",
  "x-switchyard-body-sha256",
  "x-forwarded-for",
  "x-real-ip",
  "forwarded",
  "x-service-signature",
  "x-client-ip",
] as const;

/** A header value: an allow-listed address, a fixed id, or printable noise. */
const headerValue = fc.oneof(
  fc.constant("203.0.113.7"),
  fc.constant("fixed-id"),
  fc.constant("for=203.0.113.7"),
  fc.stringMatching(/^[ -~]{0,40}$/).map((s) => s.trim()),
);

/** Any set of the spoofed headers. */
const spoofedHeaders = fc.dictionary(fc.constantFrom(...SPOOFED_NAMES), headerValue, { maxKeys: SPOOFED_NAMES.length });

/** One request of a burst: a REST read, a REST submission or a GraphQL read. */
const surface = fc.constantFrom("rest-read", "rest-submit", "graphql-read");

async function call(kind: string, key: string, headers: Record<string, string>, i: number): Promise<number> {
  if (kind === "rest-read") return (await t.rest("GET", "/api/v1/usage?limit=1", { key, headers })).status;
  if (kind === "rest-submit")
    return (await t.rest("POST", "/api/v1/video/generations", { key, headers, body: { model_id: 52, prompt: `fuzz ${i}`, seconds: 5 } })).status;
  const answer = await t.graphql("{ viewer { id } }", {}, key, headers);
  return answer.body.data?.viewer ? 200 : (answer.body.errors?.[0]?.extensions?.http?.status ?? answer.status);
}

describe("any headers", () => {
  it(
    "never let a key allow-listed for 203.0.113.7 through from 127.0.0.1, and change nothing",
    async () => {
      const { key } = await t.createKey("50", { allowIps: ["203.0.113.7/32"] });
      await checkProperty(
        fc.asyncProperty(spoofedHeaders, surface, async (headers, kind) => {
          const before = await snapshot(t.stack.db!);
          const status = await call(kind, key, headers, 0);
          expect(status, JSON.stringify(headers)).toBe(403);
          await expectNoWrites(t.stack.db!, before, JSON.stringify(headers));
        }),
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    "never let a key limited to 3/s get more than 3 answers in one second, and charge only what was answered",
    async () => {
      await checkProperty(
        fc.asyncProperty(fc.array(fc.tuple(spoofedHeaders, surface), { minLength: 8, maxLength: 12 }), async (requests) => {
          const { key } = await t.createKey("100", { rateLimit: 3 });
          const started = Date.now();
          const statuses = await Promise.all(requests.map(([headers, kind], i) => call(kind, key, headers, i)));
          const elapsed = Date.now() - started;
          const answered = statuses.filter((s) => s === 200).length;
          // A sent X-Service-Signature is verified whatever the key (401 when it does not hold, before the count).
          for (const [i, s] of statuses.entries())
            expect([200, 429, ...(requests[i]![0]["x-service-signature"] ? [401] : [])], statuses.join(",")).toContain(s);
          expect(answered, statuses.join(",")).toBeLessThanOrEqual(elapsed < 1000 ? 3 : 3 * Math.ceil(elapsed / 1000 + 1));
          const submitted = requests.filter(([, kind], i) => kind === "rest-submit" && statuses[i] === 200).length;
          const balance = await waitUntil(
            () => t.graphql("{ viewer { balance { amount } } }", {}, key),
            (r) => Boolean(r.body.data?.viewer),
          );
          expect(Number(balance.body.data.viewer.balance.amount)).toBe(100 - 5 * submitted);
        }),
        Math.max(3, Math.ceil(Number(process.env.FUZZ_RUNS ?? 25) / 5)),
      );
    },
    PROPERTY_TIMEOUT_MS,
  );
});

/** One alias of a submission: valid (charged 5 yuan: model 52, 5 s) or invalid in one way. */
const alias = fc.constantFrom(
  '{ modelId: 52, prompt: "ok", seconds: 5 }',
  '{ modelId: 52, prompt: " ", seconds: 5 }',
  '{ modelId: 52, prompt: "ok", seconds: 999 }',
  '{ modelId: 9999, prompt: "ok", seconds: 5 }',
);

describe("any mix of aliases", () => {
  it(
    "shows every charged task in the answer: the balance moves by exactly the tasks in data",
    async () => {
      await checkProperty(
        fc.asyncProperty(fc.array(alias, { minLength: 1, maxLength: 12 }), fc.integer({ min: 0, max: 40 }), async (inputs, topUp) => {
          const { key, account_id } = await t.createKey(String(topUp));
          const fields = inputs.map((input, i) => `a${i}: submitVideoGeneration(input: ${input}) { task { id price { amount } } }`).join(" ");
          const answer = await t.graphql(`mutation { ${fields} }`, {}, key);
          expect(answer.status, JSON.stringify(answer.body)).toBe(200);
          const tasks = Object.values(answer.body.data ?? {}).filter(Boolean) as { task: { id: string; price: { amount: string } } }[];
          // Each alias is either a task or null with an error at its path.
          expect(tasks.length + (answer.body.errors?.length ?? 0)).toBe(inputs.length);
          const charged = tasks.reduce((sum, p) => sum + Number(p.task.price.amount), 0);
          const balance = await t.graphql("{ viewer { balance { amount } } }", {}, key);
          expect(Number(balance.body.data.viewer.balance.amount)).toBeCloseTo(topUp - charged, 2);
          const stored = await t.stack.db!("tasks")
            .join("api_keys", "api_keys.id", "tasks.key_id")
            .where("api_keys.account_id", account_id)
            .count({ n: "*" })
            .first();
          // Refused submissions may stay as audit rows only when they were charged and refunded: none here.
          expect(Number(stored!.n)).toBe(tasks.length);
        }),
      );
      expect(await verifyLedger(t.stack.db!)).toEqual([]);
    },
    PROPERTY_TIMEOUT_MS,
  );
});
