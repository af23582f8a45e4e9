/**
 * examples/dashboard (issue 21 §2): a typed client built only from schema/api.graphql with GraphQL
 * Code Generator's client preset, urql and graphql-ws. Its generated code is what codegen
 * produces from the committed schema and holds no federation machinery; run as a reader runs it
 * (`npm start` in its folder), it answers the README's dashboard across both subgraphs and
 * prints a task's status live from the `taskStatusChanged` subscription.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { generate } from "@graphql-codegen/cli";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import config from "../../examples/dashboard/codegen.ts";
import { topUpCustomer } from "../../src/cloud/customers.ts";
import { parseYuan } from "../../src/money.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

const EXAMPLE = new URL("../../examples/dashboard/", import.meta.url);
const run = promisify(execFile);

describe("examples/dashboard's generated code", () => {
  it("is what GraphQL Code Generator produces from schema/api.graphql (run `npm run codegen` in examples/dashboard)", async () => {
    // The committed schema, whatever SWITCHYARD_SCHEMA says (codegen.ts reads it to point at a server).
    const files: { filename: string; content: string }[] = await generate(
      { ...config, schema: "../../schema/api.graphql", cwd: fileURLToPath(EXAMPLE), silent: true },
      false,
    );
    expect(files.map((f) => f.filename).sort()).toEqual(["src/gql/gql.ts", "src/gql/graphql.ts", "src/gql/index.ts"]);
    for (const { filename, content } of files) expect(fs.readFileSync(new URL(filename, EXAMPLE), "utf8"), filename).toBe(content);
  }, 60_000);

  it("has no join__ or link__ types, nor any other federation name", () => {
    for (const name of fs.readdirSync(new URL("src/gql/", EXAMPLE))) {
      const text = fs.readFileSync(new URL(`src/gql/${name}`, EXAMPLE), "utf8");
      expect(text, name).not.toMatch(/join__|link__|_Service|_Entity|_Any\b|_entities/);
    }
    // DateTime fields are typed as the string they are on the wire (codegen.ts `scalars`), not `any`.
    const types = fs.readFileSync(new URL("src/gql/graphql.ts", EXAMPLE), "utf8");
    expect(types).toMatch(/resource: \{ expiresAt: string \} \| null/);
    expect(types).toMatch(/updatedAt: string \}/);
    expect(types).not.toMatch(/:\s*any\b/);
  });
});

describe("examples/dashboard against a real server", () => {
  let t: TestStack;
  beforeAll(async () => {
    t = await startTestStack();
  });
  afterAll(() => t.close());

  it("answers the README's dashboard from both subgraphs and prints the task's status live until it succeeds", async () => {
    const { key, account_id: accountId } = await t.createKey("100");
    await topUpCustomer(t.stack.db!, { accountId, customerId: "cust-42", amount: parseYuan("500") });
    const order = await t.rest("POST", "/openapi/v1/orders", {
      key,
      headers: { "idempotency-key": "dashboard-example-1" },
      body: {
        client_order_no: "SO-DASH-1",
        product_id: "prd_cdn_standard",
        quantity: 1,
        billing_cycle: "monthly",
        customer: { customer_id: "cust-42", contact: "ops@shop.example" },
        metadata: { domain: "www.shop.example" },
      },
    });
    expect(order.status).toBe(201);
    const orderId: string = order.body.data.order_id;

    const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", "src/main.ts"], {
      cwd: fileURLToPath(EXAMPLE),
      env: { ...process.env, SWITCHYARD_URL: t.url, SWITCHYARD_KEY: key, CUSTOMER_ID: "cust-42" },
      timeout: 60_000,
    });
    expect(stderr).toBe("");
    const lines = stdout.trimEnd().split("\n");
    // The dashboard: generation (balance, spent, tasks) and cloud (orders, product, vendor, customer balance) in one answer.
    expect(lines.slice(0, 4)).toEqual([
      `Dashboard of ${t.url}`,
      expect.stringMatching(/^ {2}balance 100\.00 CNY, spent \d+\.\d{2,3}$/),
      "  tasks: 0",
      "  orders: 1",
    ]);
    expect(lines[4]).toMatch(new RegExp(`^ {4}${orderId} (PROVISIONING|ACTIVE) 30\\.00 CDN acceleration, standard \\(Nimbus Cloud\\)`));
    expect(lines[5]).toBe("  customer cust-42: available 470.00, credit line 0.00");
    // The submission, then the subscription's events: the task's state at once, then each change, until SUCCEEDED.
    const submitted = /^Submitted (task_\S+) \(1\.125 CNY\)$/.exec(lines[6]!);
    expect(submitted, stdout).not.toBeNull();
    expect(lines[7]).toBe(`Watching ${submitted![1]} live:`);
    const events = lines.slice(8);
    expect(events.length).toBeGreaterThanOrEqual(1);
    for (const event of events) expect(event).toMatch(/^ {2}\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (QUEUED|SUBMITTED|PROCESSING|SUCCEEDED)\b/);
    expect(events.at(-1)).toMatch(/ SUCCEEDED http:\/\/127\.0\.0\.1:\d+\/media\/sim\/task_\S+\.mp4$/);
    // What the example printed is what the server holds.
    const task = await t.waitForTask(key, submitted![1]!, (x) => x.status === 1);
    expect(events.at(-1)).toContain(task.result);
  }, 120_000);
});
