/**
 * Signed callbacks end to end (docs/api/cloud.md §6, docs/architecture.md §6): events caused through the router
 * reach a real HTTP receiver, signed, retried until it accepts, every attempt visible in GraphQL.
 */
import { EventEmitter } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitForState } from "../support/events.ts";
import { startTestStack, waitUntil, type TestStack } from "../support/stack.ts";
import { topUpCustomer } from "../../src/cloud/customers.ts";
import { parseYuan } from "../../src/money.ts";

interface Received {
  event: string;
  deliveryId: string;
  body: any;
  signatureValid: boolean;
}

/** A receiver that answers 500 to the first two attempts of every delivery, then 200. */
async function startReceiver(secretOf: () => string) {
  const attempts = new Map<string, number>();
  const accepted: Received[] = [];
  const events = new EventEmitter();
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const deliveryId = String(req.headers["x-service-delivery"]);
    const n = (attempts.get(deliveryId) ?? 0) + 1;
    attempts.set(deliveryId, n);
    if (n <= 2) return res.writeHead(500).end("not yet");
    // Verify the signature from the secret, independently of the product's own code.
    const header = String(req.headers["x-service-signature"] ?? "");
    const t = /t=(\d+)/.exec(header)?.[1];
    const v1 = /v1=([0-9a-f]+)/.exec(header)?.[1];
    const expected = createHmac("sha256", secretOf()).update(`${t}.${raw}`).digest("hex");
    const fresh = Math.abs(Date.now() / 1000 - Number(t)) <= 300;
    const body = JSON.parse(raw);
    accepted.push({ event: body.event, deliveryId, body, signatureValid: v1 === expected && fresh });
    res.writeHead(200).end("ok");
    events.emit("accepted");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    accepted,
    events,
    attempts,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe("callbacks to the key's callback URL", () => {
  let t: TestStack;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let secret = "";
  let key: string;

  beforeAll(async () => {
    t = await startTestStack();
    receiver = await startReceiver(() => secret);
    const created = await t.createKey("10", { callbackUrl: receiver.url });
    secret = created.webhook_secret;
    key = created.key;
    await topUpCustomer(t.stack.db!, { accountId: created.account_id, customerId: "c1", amount: parseYuan("500"), keyId: created.id });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  it("delivers every order event once, signed, after two failed attempts each, and shows the attempts in GraphQL", async () => {
    const created = await t.rest("POST", "/openapi/v1/orders", {
      key,
      body: {
        client_order_no: "cb-1",
        product_id: "prd_cdn_standard",
        quantity: 1,
        billing_cycle: "monthly",
        customer: { customer_id: "c1" },
        metadata: { domain: "cb.example.com" },
      },
    });
    expect(created.status).toBe(201);
    const orderId = created.body.data.order_id;
    const wanted = ["order.created", "order.paid", "order.provisioned"];
    await waitForState(
      receiver.events,
      "accepted",
      async () => receiver.accepted.filter((r) => r.body.data?.order_id === orderId).map((r) => r.event),
      (events) => wanted.every((e) => events.includes(e)),
    );
    const forOrder = receiver.accepted.filter((r) => r.body.data?.order_id === orderId);
    for (const event of wanted) expect(forOrder.filter((r) => r.event === event)).toHaveLength(1);
    for (const r of receiver.accepted) {
      expect(r.signatureValid).toBe(true);
      expect(receiver.attempts.get(r.deliveryId)).toBe(3);
      expect(Object.keys(r.body).sort()).toEqual(["created_at", "data", "event", "request_id"]);
    }
    const provisioned = forOrder.find((r) => r.event === "order.provisioned")!;
    expect(provisioned.body.data).toMatchObject({ order_id: orderId, client_order_no: "cb-1", resource_id: expect.any(String), status: "active" });
    const paid = forOrder.find((r) => r.event === "order.paid")!;
    expect(paid.body.request_id).toBe(created.body.request_id);

    // The receiver answered 200 before the dispatcher recorded the attempt: wait for the record
    // (no event announces it: the attempt is a row, written after the answer).
    const deliveries = await waitUntil(
      async () =>
        (await t.graphql(`query($id: ID!) { order(id: $id) { deliveries { event status attempts { status } } } }`, { id: orderId }, key)).body.data.order
          .deliveries,
      (list: any[]) => list.some((d) => d.event === "order.provisioned" && d.status !== "pending"),
    );
    expect(deliveries.filter((d: any) => d.event === "order.provisioned")).toEqual([
      { event: "order.provisioned", status: "delivered", attempts: [{ status: 500 }, { status: 500 }, { status: 200 }] },
    ]);
  });

  it("delivers billing.transaction.created for the deduction of a paid order", async () => {
    await waitForState(
      receiver.events,
      "accepted",
      async () => receiver.accepted.filter((r) => r.event === "billing.transaction.created").map((r) => r.body.data.type),
      (types) => types.includes("deduction"),
    );
  });

  it("delivers task.succeeded for a generation task of the same key", async () => {
    const submitted = await t.rest("POST", "/api/v1/images/generations", { key, body: { prompt: "a kite", model_id: 45 } });
    expect(submitted.status).toBe(200);
    const taskId = submitted.body.data.task_id;
    const got = await waitForState(
      receiver.events,
      "accepted",
      async () => receiver.accepted.find((r) => r.event === "task.succeeded" && r.body.data.task_id === taskId),
      (r) => r !== undefined,
    );
    expect(got!.body.data).toMatchObject({ task_id: taskId, status: 1 });
  });
});
