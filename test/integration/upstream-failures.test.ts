/**
 * Upstream failures through the whole stack (docs/api/generation.md §4 rule 6; docs/architecture.md §5): the
 * router and generation subgraph talk to a real fake provider over HTTP, and every way the
 * provider can fail leaves the caller's balance exact.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyLedger } from "../../src/ledger/index.ts";
import { startFakeUpstream, type FakeUpstream } from "../support/fake-upstream.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

const UPSTREAM_KEY = "upstream-secret-key-123";
/** Model 52, 5 s, count 1: 5.00 yuan. */
const VIDEO_BODY = { prompt: "a lighthouse at dusk", model_id: 52, seconds: 5 };
/** A reference URL with a public IP literal: passes the URL guard without DNS. */
const PUBLIC_IMAGE = "https://93.184.216.34/reference.png";

const milli = (yuan: number) => Math.round(yuan * 1000);

describe("generation tasks against a failing HTTP upstream", () => {
  let t: TestStack;
  let fake: FakeUpstream;

  beforeAll(async () => {
    fake = await startFakeUpstream();
    t = await startTestStack({
      GENERATION_UPSTREAM_URL: fake.url,
      GENERATION_UPSTREAM_KEY: UPSTREAM_KEY,
      UPSTREAM_TIMEOUT_MS: "300",
    });
  });
  afterAll(async () => {
    await t?.close();
    await fake?.close();
  });

  async function usage(key: string) {
    const response = await t.rest("GET", "/api/v1/usage", { key });
    expect(response.status).toBe(200);
    return response.body.data;
  }

  /** Debits and refunds of a key, in milli-yuan, read straight from the ledger. */
  async function ledgerTotals(keyId: string): Promise<{ debits: number; refunds: number }> {
    const rows = await t.stack.db!("ledger_entries").where("key_id", keyId).select("kind", "amount");
    let debits = 0;
    let refunds = 0;
    for (const row of rows) {
      if (row.kind === "debit") debits -= Number(row.amount);
      if (row.kind === "refund") refunds += Number(row.amount);
    }
    return { debits, refunds };
  }

  /** Asserts balance and spent of a key, that spent is debits minus refunds, and that the books are clean. */
  async function expectMoney(key: { id: string; key: string }, expected: { balance: number; spent: number; debits: number; refunds: number }) {
    const data = await usage(key.key);
    expect(data.balance).toBe(expected.balance);
    expect(data.spent).toBe(expected.spent);
    const totals = await ledgerTotals(key.id);
    expect(totals).toEqual({ debits: milli(expected.debits), refunds: milli(expected.refunds) });
    expect(milli(data.spent)).toBe(totals.debits - totals.refunds);
    expect(await verifyLedger(t.stack.db!)).toEqual([]);
    return data;
  }

  /** Submits the 5.00 video with a fresh 10-yuan key while the fake answers with `behaviour`. */
  async function submitAgainst(behaviour: Parameters<FakeUpstream["onSubmit"]>[0]) {
    const key = await t.createKey("10");
    fake.onSubmit(behaviour);
    const before = fake.requests.length;
    const response = await t.rest("POST", "/api/v1/video/generations", { key: key.key, body: VIDEO_BODY });
    // The provider really was asked: the failure is its, not ours.
    expect(fake.requests.length).toBe(before + 1);
    expect(fake.requests[before]).toMatchObject({ method: "POST", path: "/api/v1/video/generations" });
    return { key, response };
  }

  async function expectRefundedSubmission(key: { id: string; key: string }, message: string) {
    const data = await expectMoney(key, { balance: 10, spent: 0, debits: 5, refunds: 5 });
    // The refused submission is recorded as a failed task that costs nothing.
    expect(data.tasks).toHaveLength(1);
    expect(data.tasks[0]).toMatchObject({ status: 2, error: message, amount: 0, price: 5, refunded: 5 });
    expect(data.billed_seconds).toBe(0);
  }

  it("answers 502 and refunds the full price when the upstream returns HTTP 500", async () => {
    const { key, response } = await submitAgainst({ kind: "http_error", status: 500 });
    expect(response.status).toBe(502);
    expect(response.body).toEqual({ code: 502, message: "Upstream request failed" });
    await expectRefundedSubmission(key, "Upstream request failed");
  });

  it("answers 502 and refunds the full price when the upstream answers a business code other than 200", async () => {
    const { key, response } = await submitAgainst({ kind: "business_error", code: 4001 });
    expect(response.status).toBe(502);
    expect(response.body).toEqual({ code: 502, message: "Upstream request failed" });
    await expectRefundedSubmission(key, "Upstream request failed");
  });

  it("answers 502 and refunds the full price when the upstream answers code 200 without a task_id", async () => {
    const { key, response } = await submitAgainst({ kind: "no_task_id" });
    expect(response.status).toBe(502);
    expect(response.body).toEqual({ code: 502, message: "Upstream request failed" });
    await expectRefundedSubmission(key, "Upstream request failed");
  });

  it("answers 502 and refunds the full price when the upstream body is not JSON", async () => {
    const { key, response } = await submitAgainst({ kind: "unparsable" });
    expect(response.status).toBe(502);
    expect(response.body).toEqual({ code: 502, message: "Upstream request failed" });
    await expectRefundedSubmission(key, "Upstream request failed");
  });

  it("answers 504 and refunds the full price when the upstream does not answer within UPSTREAM_TIMEOUT_MS", async () => {
    const started = Date.now();
    const { key, response } = await submitAgainst({ kind: "hang" });
    expect(response.status).toBe(504);
    expect(response.body).toEqual({ code: 504, message: "Upstream request timed out" });
    // The 300 ms timeout decided, not some later default.
    expect(Date.now() - started).toBeLessThan(5_000);
    await expectRefundedSubmission(key, "Upstream request timed out");
  });

  it("ends the task in status 2 with the upstream's error and refunds the full price when the upstream later reports failure", async () => {
    const key = await t.createKey("10");
    fake.onSubmit({ kind: "accept", taskId: "up-later-failure" });
    const response = await t.rest("POST", "/api/v1/video/generations", { key: key.key, body: VIDEO_BODY });
    expect(response.status).toBe(200);
    expect(response.body.data).toMatchObject({ status: 0, amount: 5 });
    // Accepted: the price stays debited while the task runs.
    await expectMoney(key, { balance: 5, spent: 5, debits: 5, refunds: 0 });

    fake.setTask("up-later-failure", { status: 2, error: "content policy violation" });
    const task = await t.waitForTask(key.key, response.body.data.task_id);
    expect(task).toMatchObject({ status: 2, error: "content policy violation", result: null, amount: 0 });
    const data = await expectMoney(key, { balance: 10, spent: 0, debits: 5, refunds: 5 });
    expect(data.billed_seconds).toBe(0);
  });

  it("charges only the images generated when an image task of 3 ends with 2 images", async () => {
    const key = await t.createKey("10");
    const images = ["https://cdn.provider.example/img-1.png", "https://cdn.provider.example/img-2.png"];
    fake.onSubmit({ kind: "accept", taskId: "up-partial-images" });
    const response = await t.rest("POST", "/api/v1/images/generations", { key: key.key, body: { prompt: "three apples", model_id: 45, count: 3 } });
    expect(response.status).toBe(200);
    expect(response.body.data).toMatchObject({ status: 0, amount: 0.9 });
    await expectMoney(key, { balance: 9.1, spent: 0.9, debits: 0.9, refunds: 0 });

    fake.setTask("up-partial-images", { status: 1, images });
    const task = await t.waitForTask(key.key, response.body.data.task_id);
    expect(task.status).toBe(1);
    expect(task.images).toEqual(images);
    expect(task.result).toBe(images[0]);
    expect(task.amount).toBe(0.6);
    const data = await expectMoney(key, { balance: 9.4, spent: 0.6, debits: 0.9, refunds: 0.3 });
    expect(data.billed_images).toBe(2);
  });

  it("completes a task with the provider's result, calling it with our upstream key, the snake_case body and our task id as its reference", async () => {
    const key = await t.createKey("10");
    fake.onSubmit({ kind: "accept", taskId: "up-success" });
    const before = fake.requests.length;
    const response = await t.rest("POST", "/api/v1/video/generations", {
      key: key.key,
      body: {
        prompt: "a paper boat",
        model_id: 39,
        seconds: 10,
        size: "16:9",
        count: 1,
        reference_image: PUBLIC_IMAGE,
        frame_start: "https://93.184.216.34/first.png",
        frame_end: "https://93.184.216.34/last.png",
      },
    });
    expect(response.status).toBe(200);
    expect(response.body.data).toMatchObject({ model_id: 39, status: 0, amount: 4 });

    const submission = fake.requests[before]!;
    expect(submission.method).toBe("POST");
    expect(submission.path).toBe("/api/v1/video/generations");
    expect(submission.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    // The caller's own key never leaves our side.
    expect(JSON.stringify(fake.requests)).not.toContain(key.key);
    // Our task id rides along as the reference a lost answer is found by (and as Idempotency-Key).
    expect(submission.idempotencyKey).toBe(response.body.data.task_id);
    expect(submission.body).toEqual({
      client_reference: response.body.data.task_id,
      prompt: "a paper boat",
      model_id: 39,
      count: 1,
      resolution: "720P",
      size: "16:9",
      seconds: 10,
      reference_images: [PUBLIC_IMAGE],
      frame_start: "https://93.184.216.34/first.png",
      frame_end: "https://93.184.216.34/last.png",
    });

    fake.setTask("up-success", { status: 1, result: "https://cdn.provider.example/boat.mp4" });
    const task = await t.waitForTask(key.key, response.body.data.task_id);
    expect(task).toMatchObject({ status: 1, result: "https://cdn.provider.example/boat.mp4", error: null, amount: 4 });
    // Status polls carry the upstream key too.
    const polls = fake.requests.filter((r) => r.method === "GET" && r.path === "/api/v1/tasks/up-success");
    expect(polls.length).toBeGreaterThan(0);
    for (const poll of polls) expect(poll.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    const data = await expectMoney(key, { balance: 6, spent: 4, debits: 4, refunds: 0 });
    expect(data.billed_seconds).toBe(10);
  });
});
