/**
 * REST and GraphQL are two doors to one implementation (docs/architecture.md §1, §4, §8): the same request
 * gets the same price, status, task and errors through `/api/v1/*` and `/graphql`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { toCamel } from "../../src/names.ts";

const SUBMIT_VIDEO = `mutation ($input: SubmitVideoGenerationInput!) {
  submitVideoGeneration(input: $input) { task { id price { amount } statusCode statusName model { id } } }
}`;
const TASK = `query ($id: ID!) {
  task(id: $id) { id statusCode statusName result error price { amount } charged { amount } model { id } }
}`;

/** snake_case REST body → camelCase GraphQL input. */
function toInput(body: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(body).map(([k, v]) => [toCamel(k), v]));
}

describe("REST and GraphQL parity", () => {
  let t: TestStack;
  beforeAll(async () => {
    t = await startTestStack();
  });
  afterAll(() => t?.close());

  async function balance(key: string): Promise<number> {
    const usage = await t.rest("GET", "/api/v1/usage", { key });
    expect(usage.status).toBe(200);
    return usage.body.data.balance;
  }

  it("prices and answers the same request identically through REST and GraphQL, and both tasks read the same both ways", async () => {
    const { key } = await t.createKey("100");
    const body = { prompt: "a glass city at night", model_id: 67, seconds: 10, resolution: "720P", size: "16:9", count: 2 };

    const rest = await t.rest("POST", "/api/v1/video/generations", { key, body });
    expect(rest.status).toBe(200);
    const gql = await t.graphql(SUBMIT_VIDEO, { input: toInput(body) }, key);
    expect(gql.body.errors).toBeUndefined();
    const gqlTask = gql.body.data.submitVideoGeneration.task;

    // 67 at 720P: 10 s × 2 × 2.00 = 40.00, both ways.
    expect(rest.body.data.amount).toBe(40);
    expect(gqlTask.price.amount).toBe("40.00");
    expect(Number(gqlTask.price.amount)).toBe(rest.body.data.amount);
    expect(gqlTask.statusCode).toBe(0);
    expect(rest.body.data.status).toBe(gqlTask.statusCode);
    expect(rest.body.data.status_name).toBe(gqlTask.statusName);
    expect(gqlTask.model.id).toBe(67);
    expect(rest.body.data.model_id).toBe(gqlTask.model.id);
    expect(await balance(key)).toBe(20);

    for (const id of [rest.body.data.task_id, gqlTask.id]) {
      const restTask = await t.waitForTask(key, id);
      expect(restTask.status).toBe(1);
      const read = await t.graphql(TASK, { id }, key);
      expect(read.body.errors).toBeUndefined();
      const task = read.body.data.task;
      expect(task.id).toBe(id);
      expect(task.statusCode).toBe(restTask.status);
      expect(task.statusName).toBe(restTask.status_name);
      expect(task.result).toBe(restTask.result);
      expect(typeof task.result).toBe("string");
      expect(task.error).toBe(restTask.error);
      expect(Number(task.charged.amount)).toBe(restTask.amount);
      expect(Number(task.price.amount)).toBe(restTask.price);
      expect(restTask.amount).toBe(40);
      expect(task.model.id).toBe(restTask.model_id);
    }
  });

  // Validation errors: the same message both ways, GraphQL carrying code and HTTP status.
  const invalid: { name: string; body: Record<string, unknown>; message: string }[] = [
    { name: "seconds 3 on model 52", body: { prompt: "x", model_id: 52, seconds: 3 }, message: "seconds has an unsupported value" },
    { name: "an empty prompt", body: { prompt: "  ", model_id: 52 }, message: "prompt must be a non-empty string" },
    { name: "an unknown model", body: { prompt: "x", model_id: 99 }, message: "model_id must be one of: 52, 51, 67, 69, 39, 45" },
    { name: "1080P on model 67", body: { prompt: "x", model_id: 67, resolution: "1080P" }, message: "resolution has an unsupported value" },
    { name: "count 5", body: { prompt: "x", model_id: 52, count: 5 }, message: "count has an unsupported value" },
    {
      name: "an HTTP reference image",
      body: { prompt: "x", model_id: 52, reference_image: "http://93.184.216.34/a.png" },
      message: "reference_image must be a public HTTPS URL",
    },
    {
      name: "frames on model 52",
      body: { prompt: "x", model_id: 52, frame_start: "https://93.184.216.34/a.png" },
      message: "frame_start has an unsupported value",
    },
    { name: "a prompt of 4001 code points", body: { prompt: "\u{1F98A}".repeat(4001), model_id: 52 }, message: "prompt must be a non-empty string" },
  ];

  it.each(invalid)("rejects $name with the same 400 message through REST and GraphQL", async ({ body, message }) => {
    const { key } = await t.createKey("100");
    const rest = await t.rest("POST", "/api/v1/video/generations", { key, body });
    expect(rest.status).toBe(400);
    expect(rest.body).toEqual({ code: 400, message });

    const gql = await t.graphql(SUBMIT_VIDEO, { input: toInput(body) }, key);
    expect(gql.body.data?.submitVideoGeneration ?? null).toBeNull();
    expect(gql.body.errors).toHaveLength(1);
    expect(gql.body.errors[0].message).toBe(message);
    expect(gql.body.errors[0].extensions.code).toBe("invalid_request");
    expect(gql.body.errors[0].extensions.http.status).toBe(400);
    // GraphQL sends camelCase, yet the field is named as the spec names it (docs/architecture.md §7.3).
    expect(gql.body.errors[0].extensions.field).toBe(message.split(" ")[0]);
    expect(await balance(key)).toBe(100);
  });

  // Cloud inputs: the same 422 through REST and GraphQL, the field named as the spec names it.
  const CREATE_ORDER = `mutation ($input: CreateOrderInput!) { createOrder(input: $input) { order { id } } }`;
  const orderBody = {
    client_order_no: "PARITY-1",
    product_id: "prd_cdn_standard",
    quantity: 1,
    billing_cycle: "monthly",
    customer: { customer_id: "cust-parity" },
    metadata: { domain: "www.parity.example" },
  };
  /**
   * `required`: the GraphQL input omits a field the schema makes non-null (issue 21 §1), so GraphQL
   * validation refuses it first (400 `bad_user_input` naming the field); REST still answers the
   * service's 422.
   */
  const invalidOrders: { name: string; body: Record<string, unknown>; field: string; message: string; required?: string }[] = [
    { name: "a blank client_order_no", body: { ...orderBody, client_order_no: "" }, field: "client_order_no", message: "client_order_no is required" },
    {
      name: "no customer.customer_id",
      body: { ...orderBody, customer: { contact: "ops@parity.example" } },
      field: "customer.customer_id",
      message: "customer.customer_id is required",
      required: 'Field "customerId" of required type "String!" was not provided.',
    },
    {
      name: "a billing_cycle the product lacks",
      body: { ...orderBody, billing_cycle: "weekly" },
      field: "billing_cycle",
      message: "billing_cycle must be one of: monthly, quarterly, yearly",
    },
    {
      name: "a metadata.domain that is no host name",
      body: { ...orderBody, metadata: { domain: "not a host" } },
      field: "metadata.domain",
      message: "metadata.domain must be a valid host name such as www.example.com",
    },
  ];

  it("keeps the caller's metadata exactly as sent through REST and GraphQL: keys are never renamed", async () => {
    const { key } = await t.createKey("0");
    const metadata = { domain: "www.parity.example", snake_key: 1, camelKey: { inner_snake: [true] } };
    const rest = await t.rest("POST", "/openapi/v1/orders", { key, body: { ...orderBody, client_order_no: "PARITY-META-1", metadata } });
    expect(rest.status).toBe(201);
    expect(rest.body.data.metadata).toEqual(metadata);
    const input = { ...toInput({ ...orderBody, client_order_no: "PARITY-META-2" }), customer: { customerId: "cust-parity" }, metadata };
    const gql = await t.graphql(`mutation ($input: CreateOrderInput!) { createOrder(input: $input) { order { metadata } } }`, { input }, key);
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.createOrder.order.metadata).toEqual(metadata);
  });

  it.each(invalidOrders)("refuses an order with $name with the same 422 and field through REST and GraphQL", async ({ body, field, message, required }) => {
    const { key } = await t.createKey("0");
    const rest = await t.rest("POST", "/openapi/v1/orders", { key, body });
    expect(rest.status).toBe(422);
    expect(rest.body.error).toEqual({ code: "validation_failed", message, details: { field } });

    const input = { ...toInput(body), customer: toInput(body.customer as Record<string, unknown>) };
    const gql = await t.graphql(CREATE_ORDER, { input }, key);
    expect(gql.body.errors).toHaveLength(1);
    if (required) {
      expect(gql.status).toBe(400);
      expect(gql.body.errors[0].message).toContain(required);
      expect(gql.body.errors[0].extensions).toMatchObject({ code: "bad_user_input", http: { status: 400 } });
      return;
    }
    expect(gql.body.errors[0]).toMatchObject({ message, extensions: { code: "validation_failed", field, http: { status: 422 } } });
  });

  it("refuses a 900 KB prompt on both endpoints through REST and GraphQL, storing and charging nothing", async () => {
    const { key } = await t.createKey("100");
    const prompt = "a fox ".repeat(150 * 1024); // 900 KiB, under the 1 MiB body limit
    const SUBMIT_IMAGE = `mutation ($input: SubmitImageGenerationInput!) { submitImageGeneration(input: $input) { task { id } } }`;
    for (const [path, body, query] of [
      ["/api/v1/video/generations", { prompt, model_id: 52 }, SUBMIT_VIDEO],
      ["/api/v1/images/generations", { prompt, model_id: 45 }, SUBMIT_IMAGE],
    ] as const) {
      const rest = await t.rest("POST", path, { key, body });
      expect([rest.status, rest.body]).toEqual([400, { code: 400, message: "prompt must be a non-empty string" }]);
      const gql = await t.graphql(query, { input: toInput(body) }, key);
      expect(gql.body.errors).toHaveLength(1);
      expect(gql.body.errors[0]).toMatchObject({
        message: "prompt must be a non-empty string",
        extensions: { code: "invalid_request", http: { status: 400 }, field: "prompt", max_code_points: 4000 },
      });
    }
    const usage = await t.rest("GET", "/api/v1/usage", { key });
    expect(usage.body.data).toMatchObject({ balance: 100, spent: 0, tasks: [] });
  });

  it("answers 402 Insufficient balance the same way through REST and GraphQL, charging nothing", async () => {
    const { key } = await t.createKey("4.99");
    const body = { prompt: "a red bicycle", model_id: 52, seconds: 5 };
    const rest = await t.rest("POST", "/api/v1/video/generations", { key, body });
    expect(rest.status).toBe(402);
    expect(rest.body).toEqual({ code: 402, message: "Insufficient balance" });

    const gql = await t.graphql(SUBMIT_VIDEO, { input: toInput(body) }, key);
    expect(gql.body.errors).toHaveLength(1);
    expect(gql.body.errors[0].message).toBe("Insufficient balance");
    expect(gql.body.errors[0].extensions.code).toBe("insufficient_balance");
    expect(gql.body.errors[0].extensions.http.status).toBe(402);
    expect(await balance(key)).toBe(4.99);
  });

  const typeErrors: { body: Record<string, unknown>; message: string }[] = [
    { body: { prompt: 5 }, message: "prompt must be a non-empty string" },
    { body: { prompt: "x", seconds: "5" }, message: "seconds has an unsupported value" },
    { body: { prompt: "x", model_id: "52" }, message: "model_id must be one of: 52, 51, 67, 69, 39, 45" },
    { body: { prompt: "x", count: 1.5 }, message: "count has an unsupported value" },
    { body: { prompt: "x", reference_images: "https://93.184.216.34/a.png" }, message: "reference_images has an unsupported value" },
    { body: { prompt: "x", reference_images: [5] }, message: "reference_images must be a public HTTPS URL" },
  ];

  it.each(typeErrors)("maps the REST body $body to the spec message", async ({ body, message }) => {
    const { key } = await t.createKey("10");
    const rest = await t.rest("POST", "/api/v1/video/generations", { key, body });
    expect(rest.status).toBe(400);
    expect(rest.body).toEqual({ code: 400, message });
    expect(await balance(key)).toBe(10);
  });

  it("localizes status_name: Chinese by default, English for Accept-Language: en, on both doors", async () => {
    const { key } = await t.createKey("10");
    const body = { prompt: "a snowy owl", model_id: 45, count: 1 };
    const chinese = await t.rest("POST", "/api/v1/images/generations", { key, body });
    expect(chinese.status).toBe(200);
    expect(chinese.body.data.status).toBe(0);
    expect(chinese.body.data.status_name).toBe("排队中");

    const english = await t.rest("POST", "/api/v1/images/generations", { key, body, headers: { "accept-language": "en" } });
    expect(english.status).toBe(200);
    expect(english.body.data.status_name).toBe("Queued");

    const id = chinese.body.data.task_id;
    const done = await t.waitForTask(key, id);
    expect(done.status).toBe(1);
    expect(done.status_name).toBe("生成成功");
    const doneEn = await t.rest("GET", `/api/v1/tasks/${id}`, { key, headers: { "accept-language": "en-US,en;q=0.9" } });
    expect(doneEn.body.data.status_name).toBe("Succeeded");
    const preferChinese = await t.rest("GET", `/api/v1/tasks/${id}`, { key, headers: { "accept-language": "zh-CN,zh;q=0.9,en;q=0.5" } });
    expect(preferChinese.body.data.status_name).toBe("生成成功");

    const gqlDefault = await t.graphql(TASK, { id }, key);
    expect(gqlDefault.body.data.task.statusName).toBe("生成成功");
    const gqlEnglish = await t.graphql(TASK, { id }, key, { "accept-language": "en" });
    expect(gqlEnglish.body.data.task.statusName).toBe("Succeeded");
  });
});
