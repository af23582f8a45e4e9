/**
 * Mutation errors and HTTP statuses of `/graphql` (docs/adr/0006-mutation-errors.md): every
 * mutation payload is nullable, so an alias that fails is null with one error naming its path and
 * never hides what its siblings charged; an answer whose `data` is not null is HTTP 200 (GraphQL
 * over HTTP), and only an answer without data takes its status from the error.
 */
import { signSubgraphRequest } from "../../subgraphs/shared/internal-context.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type GraphqlError, type TestStack } from "../support/stack.ts";
import { topUpCustomer } from "../../src/cloud/customers.ts";
import { DEMO_CATALOG } from "../../src/cloud/demo-seed.ts";
import { verifyLedger } from "../../src/ledger/index.ts";
import { parseYuan } from "../../src/money.ts";

/** A video submission's input as a GraphQL literal: model 52, 5 s at 480P, 5.00 yuan. */
const PAID_VIDEO = `{ prompt: "a red bicycle", modelId: 52, seconds: 5 }`;
const VIDEO_PRICE = "5.00";
const TASK_FIELDS = "task { id statusCode price { amount } charged { amount } }";

let t: TestStack;
let orderSeq = 0;

/** The generation balance of a key's account, in yuan as the API writes it. */
async function balanceOf(key: string): Promise<string> {
  const r = await t.graphql("{ viewer { balance { amount } } }", {}, key);
  expect(r.body.errors).toBeUndefined();
  return r.body.data.viewer.balance.amount;
}

/** Task ids debited from an account, in ledger order, and the ids of its refunds. */
async function ledgerOf(accountId: string): Promise<{ debited: string[]; refunded: string[] }> {
  const rows = await t.stack.db!<{ kind: string; task_id: string }>("ledger_entries")
    .where("account_id", accountId)
    .whereIn("kind", ["debit", "refund"])
    .orderBy("id")
    .select("kind", "task_id");
  return {
    debited: rows.filter((r) => r.kind === "debit").map((r) => r.task_id),
    refunded: rows.filter((r) => r.kind === "refund").map((r) => r.task_id),
  };
}

/** A createOrder input literal for the demo CDN product (30.00 yuan a month), overridable. */
function orderInput(customerId: string, overrides: Record<string, string> = {}): string {
  const fields: Record<string, string> = {
    clientOrderNo: `"alias-${++orderSeq}-${Date.now()}"`,
    productId: `"${DEMO_CATALOG.products.cdn}"`,
    quantity: "1",
    billingCycle: `"monthly"`,
    customer: `{ customerId: "${customerId}" }`,
    metadata: `{ domain: "alias${orderSeq}.example.com" }`,
    ...overrides,
  };
  return `{ ${Object.entries(fields)
    .map(([k, v]) => `${k}: ${v}`)
    .join(", ")} }`;
}

const ORDER_FIELDS = "order { id status paymentStatus amount { amount } } replayed";

/** The balance and transactions of one cloud customer, through the graph. */
async function customerBooks(key: string, customerId: string) {
  const r = await t.graphql(
    `query($c: String!) { customerBalance(customerId: $c) { available { amount } } transactions(customerId: $c, first: 100) { nodes { type amount { amount } order { id } } } }`,
    { c: customerId },
    key,
  );
  expect(r.body.errors).toBeUndefined();
  return { available: r.body.data.customerBalance.available.amount as string, transactions: r.body.data.transactions.nodes as any[] };
}

// In-process subgraphs (the default) and subgraphs reached over HTTP (SUBGRAPH_TRANSPORT=http, as
// when they run in processes of their own): the gateway merges partial results the same way.
describe.each(["auto", "http"])("with SUBGRAPH_TRANSPORT=%s", (transport) => {
  beforeAll(async () => {
    t = await startTestStack({ SUBGRAPH_TRANSPORT: transport });
  });
  afterAll(() => t?.close());

  describe("the served schema", () => {
    it("returns a nullable payload from every mutation of both subgraphs, admin ones included", async () => {
      const r = await t.graphql("{ __schema { mutationType { fields { name type { kind name } } } } }");
      expect(r.status).toBe(200);
      const fields = r.body.data.__schema.mutationType.fields as { name: string; type: { kind: string; name: string } }[];
      expect(fields.map((f) => f.name).sort()).toEqual(
        [
          "submitVideoGeneration",
          "submitImageGeneration",
          "createOrder",
          "renewOrder",
          "payOrder",
          "createDomain",
          "purgeDomain",
          "setUsageThreshold",
          "resendDelivery",
          "adminUpsertVendor",
          "adminUpsertProduct",
          "adminCreateApiKey",
          "adminSetApiKeyStatus",
          "adminTopUpAccount",
          "adminTopUpCustomer",
          "adminSetCustomerCreditLine",
          "adminUpdateApiKey",
          "adminResendDelivery",
          "adminAddChannel",
          "adminUpdateChannel",
          "adminSetChannelStatus",
          "adminTestChannel",
          "adminSignIn",
          "adminSignOut",
          "adminCreateOperator",
          "adminSetOperatorStatus",
        ].sort(),
      );
      for (const field of fields) expect(field.type, field.name).toEqual({ kind: "OBJECT", name: expect.stringMatching(/Payload$/) });
    });
  });

  describe("generation mutations in aliases", () => {
    it("answers 200 with the charged task of one alias and null plus one error for an invalid sibling", async () => {
      const { key, account_id } = await t.createKey("20");
      for (const accept of ["application/json", "application/graphql-response+json"]) {
        const before = await balanceOf(key);
        const r = await t.graphql(
          `mutation { a: submitVideoGeneration(input: ${PAID_VIDEO}) { ${TASK_FIELDS} } b: submitVideoGeneration(input: { prompt: "x", modelId: 99 }) { ${TASK_FIELDS} } }`,
          {},
          key,
          { accept },
        );
        expect(r.status, accept).toBe(200);
        expect(r.body.data.a.task).toMatchObject({ id: expect.stringMatching(/^task_/), statusCode: 0, price: { amount: VIDEO_PRICE } });
        expect(r.body.data.b).toBeNull();
        expect(r.body.errors).toHaveLength(1);
        expect(r.body.errors[0]).toMatchObject({
          message: "model_id must be one of: 52, 51, 67, 69, 39, 45",
          path: ["b"],
          extensions: { code: "invalid_request", http: { status: 400 } },
        });
        expect(Number(await balanceOf(key))).toBe(Number(before) - Number(VIDEO_PRICE));
      }
      const { debited, refunded } = await ledgerOf(account_id);
      expect(debited).toHaveLength(2);
      expect(refunded).toEqual([]);
      expect(await balanceOf(key)).toBe("10.00");
      expect(await verifyLedger(t.stack.db!)).toEqual([]);
    });

    it("answers 30 paid aliases on a balance that covers 4 with exactly the 4 charged tasks and 26 insufficient_balance errors", async () => {
      const { key, id: keyId, account_id } = await t.createKey("20");
      const aliases = Array.from({ length: 30 }, (_, i) => `m${i}: submitVideoGeneration(input: ${PAID_VIDEO}) { ${TASK_FIELDS} }`);
      const r = await t.graphql(`mutation Thirty { ${aliases.join("\n")} }`, {}, key);
      expect(r.status).toBe(200);

      // Mutation fields run one after another: the first four are paid, the balance is then 0.
      const charged = Object.entries(r.body.data).filter(([, payload]) => payload !== null);
      expect(charged.map(([alias]) => alias)).toEqual(["m0", "m1", "m2", "m3"]);
      for (const [, payload] of charged) expect(payload).toMatchObject({ task: { price: { amount: VIDEO_PRICE }, charged: { amount: VIDEO_PRICE } } });
      const refusedAliases = Array.from({ length: 26 }, (_, i) => `m${i + 4}`);
      for (const alias of refusedAliases) expect(r.body.data[alias]).toBeNull();
      expect((r.body.errors as GraphqlError[]).map((e) => e.path)).toEqual(refusedAliases.map((alias) => [alias]));
      for (const error of r.body.errors) {
        expect(error).toMatchObject({ message: "Insufficient balance", extensions: { code: "insufficient_balance", http: { status: 402 } } });
      }

      // The books hold exactly the tasks of the answer: no charge the client cannot see.
      const answered = charged.map(([, payload]: [string, any]) => payload.task.id);
      const { debited, refunded } = await ledgerOf(account_id);
      expect(debited).toEqual(answered);
      expect(refunded).toEqual([]);
      const tasks = await t.stack.db!("tasks").where("key_id", keyId).pluck("id");
      expect([...tasks].sort()).toEqual([...answered].sort());
      expect(await balanceOf(key)).toBe("0.00");
      expect(await verifyLedger(t.stack.db!)).toEqual([]);
    });

    it("answers 200 from the generation subgraph's own port for a partial mutation, as the router does", async () => {
      const { key } = await t.createKey("20");
      // Signed as the router signs (the subgraph serves nothing else).
      const params = signSubgraphRequest(t.stack.subgraphSecret!, {
        audience: "generation",
        query: `mutation { a: submitVideoGeneration(input: ${PAID_VIDEO}) { ${TASK_FIELDS} } b: submitVideoGeneration(input: { prompt: " " }) { ${TASK_FIELDS} } }`,
        headers: { authorization: `Bearer ${key}`, "x-switchyard-client-ip": "127.0.0.1" },
      });
      const response = await fetch(t.stack.generationUrl!, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(params) });
      expect(response.status).toBe(200);
      const body = await response.json();
      expect(body.data.a.task.price.amount).toBe(VIDEO_PRICE);
      expect(body.data.b).toBeNull();
      expect(body.errors).toEqual([
        expect.objectContaining({ path: ["b"], extensions: expect.objectContaining({ code: "invalid_request", http: { status: 400 } }) }),
      ]);
      expect(await balanceOf(key)).toBe("15.00");
    });
  });

  describe("cloud mutations in aliases", () => {
    it("answers 200 with the paid order of one createOrder alias and null plus one error for an invalid sibling", async () => {
      const { key, account_id } = await t.createKey("0");
      await topUpCustomer(t.stack.db!, { accountId: account_id, customerId: "cust-alias", amount: parseYuan("100") });
      const r = await t.graphql(
        `mutation { a: createOrder(input: ${orderInput("cust-alias")}) { ${ORDER_FIELDS} } b: createOrder(input: ${orderInput("cust-alias", { quantity: "0" })}) { ${ORDER_FIELDS} } }`,
        {},
        key,
      );
      expect(r.status).toBe(200);
      expect(r.body.data.a).toMatchObject({
        order: { id: expect.stringMatching(/^ord_/), paymentStatus: "PAID", amount: { amount: "30.00" } },
        replayed: false,
      });
      expect(r.body.data.b).toBeNull();
      expect(r.body.errors).toHaveLength(1);
      expect(r.body.errors[0]).toMatchObject({ path: ["b"], extensions: { code: "validation_failed", field: "quantity", http: { status: 422 } } });

      const books = await customerBooks(key, "cust-alias");
      expect(books.available).toBe("70.00");
      expect(books.transactions.filter((x) => x.type === "DEDUCTION")).toEqual([
        { type: "DEDUCTION", amount: { amount: "-30.00" }, order: { id: r.body.data.a.order.id } },
      ]);
      expect(await t.stack.db!("orders").where("account_id", account_id).count({ n: "*" }).first()).toMatchObject({ n: 1 });
      expect(await verifyLedger(t.stack.db!)).toEqual([]);
    });

    it("charges the renewal of the first renewOrder alias and refuses the second with insufficient_balance, both in one 200 answer", async () => {
      const { key, account_id } = await t.createKey("0");
      await topUpCustomer(t.stack.db!, { accountId: account_id, customerId: "cust-renew", amount: parseYuan("60") });
      const created = await t.graphql(`mutation { createOrder(input: ${orderInput("cust-renew")}) { ${ORDER_FIELDS} } }`, {}, key);
      const orderId = created.body.data.createOrder.order.id;
      await t.waitForAccount(
        key,
        () => t.graphql(`query($id: ID!) { order(id: $id) { status } }`, { id: orderId }, key),
        (q) => q.body.data?.order?.status === "ACTIVE",
      );

      const renew = `renewOrder(input: { orderId: "${orderId}" }) { ${ORDER_FIELDS} }`;
      const r = await t.graphql(`mutation { a: ${renew} b: ${renew} }`, {}, key);
      expect(r.status).toBe(200);
      expect(r.body.data.a).toMatchObject({ order: { id: orderId }, replayed: false });
      expect(r.body.data.b).toBeNull();
      expect(r.body.errors).toEqual([
        expect.objectContaining({ path: ["b"], extensions: expect.objectContaining({ code: "insufficient_balance", http: { status: 402 } }) }),
      ]);

      const books = await customerBooks(key, "cust-renew");
      expect(books.available).toBe("0.00");
      expect(books.transactions.filter((x) => x.type === "DEDUCTION")).toHaveLength(2);
      expect(await verifyLedger(t.stack.db!)).toEqual([]);
    });

    it("keeps what each subgraph charged when a mutation of the other subgraph fails between them", async () => {
      const { key, account_id } = await t.createKey("20");
      await topUpCustomer(t.stack.db!, { accountId: account_id, customerId: "cust-mixed", amount: parseYuan("100") });
      const r = await t.graphql(
        `mutation {
          video: submitVideoGeneration(input: ${PAID_VIDEO}) { ${TASK_FIELDS} }
          bad: createOrder(input: ${orderInput("cust-mixed", { productId: `"${DEMO_CATALOG.products.soldOut}"` })}) { ${ORDER_FIELDS} }
          order: createOrder(input: ${orderInput("cust-mixed")}) { ${ORDER_FIELDS} }
        }`,
        {},
        key,
      );
      expect(r.status).toBe(200);
      expect(r.body.data.video.task.price.amount).toBe(VIDEO_PRICE);
      expect(r.body.data.bad).toBeNull();
      expect(r.body.data.order.order.paymentStatus).toBe("PAID");
      expect(r.body.errors).toHaveLength(1);
      expect(r.body.errors[0]).toMatchObject({
        message: "product is not available",
        path: ["bad"],
        extensions: { code: "validation_failed", http: { status: 422 } },
      });
      expect(await balanceOf(key)).toBe("15.00");
      expect((await customerBooks(key, "cust-mixed")).available).toBe("70.00");
    });
  });

  describe("HTTP status of /graphql answers", () => {
    it("answers 200 with the data of a query when one nested field fails with not_found", async () => {
      const { key, account_id } = await t.createKey("1");
      const r = await t.graphql(`{ viewer { id customerBalance(customerId: "nope") { available { amount } } } }`, {}, key);
      expect(r.status).toBe(200);
      expect(r.body.data).toEqual({ viewer: { id: account_id, customerBalance: null } });
      expect(r.body.errors).toEqual([
        expect.objectContaining({ path: ["viewer", "customerBalance"], extensions: expect.objectContaining({ code: "not_found", http: { status: 404 } }) }),
      ]);
    });

    it("answers a syntax error, which has no data, with 400", async () => {
      const r = await t.graphql("{ viewer { id ", {}, undefined, { accept: "application/graphql-response+json" });
      expect(r.status).toBe(400);
      expect(r.body.data).toBeUndefined();
      expect(r.body.errors[0].extensions).toMatchObject({ code: "graphql_parse_failed", http: { status: 400 } });
    });

    it("answers a missing key with 401 when data is null, and with 200 when a nullable root field carries the error", async () => {
      const nonNullRoot = await t.graphql("{ apiKey { id } }");
      expect(nonNullRoot.status).toBe(401);
      expect(nonNullRoot.body.data ?? null).toBeNull();
      expect(nonNullRoot.body.errors[0].extensions).toMatchObject({ code: "unauthorized", http: { status: 401 } });

      const nullableRoot = await t.graphql("{ viewer { id } }");
      expect(nullableRoot.status).toBe(200);
      expect(nullableRoot.body.data).toEqual({ viewer: null });
      expect(nullableRoot.body.errors[0]).toMatchObject({ path: ["viewer"], extensions: { code: "unauthorized", http: { status: 401 } } });
    });
  });
});
