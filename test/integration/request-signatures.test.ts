/**
 * Request signatures (`X-Service-Signature`, docs/api/cloud.md §5; algorithm in src/auth/signatures.ts)
 * end to end through the router: on both REST shims and on `/graphql`, for a key created with
 * `--require-signature`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { signRequest } from "../../src/auth/signatures.ts";

describe("request signatures through the router", () => {
  let stack: TestStack;
  let key: { key: string; webhook_secret: string };
  const now = () => Math.floor(Date.now() / 1000);

  beforeAll(async () => {
    stack = await startTestStack();
    key = await stack.createKey("10", { requireSignature: true });
  });
  afterAll(() => stack?.close());

  /** Sends a request signed over `signedBody` (the body actually sent unless told otherwise). */
  const send = (
    method: string,
    path: string,
    body: string | undefined,
    options: { signedBody?: string; t?: number; secret?: string; unsigned?: boolean } = {},
  ) => {
    const headers: Record<string, string> = { authorization: `Bearer ${key.key}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (!options.unsigned) {
      headers["x-service-signature"] = signRequest(options.secret ?? key.webhook_secret, {
        method,
        path,
        body: options.signedBody ?? body ?? "",
        timestamp: options.t ?? now(),
      });
    }
    return fetch(`${stack.url}${path}`, { method, headers, body }).then(async (r) => ({ status: r.status, body: await r.json() }));
  };

  it("accepts a signed GraphQL query and runs it", async () => {
    const body = JSON.stringify({ query: "{ viewer { balance { amount } } }" });
    const answer = await send("POST", "/graphql", body);
    expect(answer.body.errors).toBeUndefined();
    expect(answer.body.data.viewer.balance.amount).toBe("10.00");
  });

  it("refuses /graphql fields with unauthorized (401 in the error) when the signature is missing, covers another body, or is stale", async () => {
    const body = JSON.stringify({ query: "{ viewer { balance { amount } } }" });
    const missing = await send("POST", "/graphql", body, { unsigned: true });
    const tampered = await send("POST", "/graphql", body, { signedBody: JSON.stringify({ query: "{ models { id } }" }) });
    const stale = await send("POST", "/graphql", body, { t: now() - 3600 });
    const wrongSecret = await send("POST", "/graphql", body, { secret: "whsec_not_this_one" });
    for (const [answer, message] of [
      [missing, "Missing request signature"],
      [tampered, "Invalid request signature"],
      [stale, "Request signature timestamp outside the tolerance"],
      [wrongSecret, "Invalid request signature"],
    ] as const) {
      // `viewer` is nullable: data is {viewer: null}, not null, so HTTP 200 (docs/adr/0006).
      expect(answer.status).toBe(200);
      expect(answer.body.errors[0]).toMatchObject({ message, extensions: { code: "unauthorized", http: { status: 401 } } });
      expect(answer.body.data).toEqual({ viewer: null });
    }
  });

  it("signs a GraphQL mutation: a signed submission is charged, an unsigned one changes nothing", async () => {
    const mutation = (prompt: string) =>
      JSON.stringify({
        query: `mutation($input: SubmitVideoGenerationInput!) { submitVideoGeneration(input: $input) { task { id price { amount } } } }`,
        variables: { input: { modelId: 52, prompt, seconds: 5 } },
      });
    const refused = await send("POST", "/graphql", mutation("unsigned"), { unsigned: true });
    expect(refused.status).toBe(200);
    expect(refused.body.data).toEqual({ submitVideoGeneration: null });
    expect(refused.body.errors[0].extensions).toMatchObject({ code: "unauthorized", http: { status: 401 } });
    const signed = await send("POST", "/graphql", mutation("signed"));
    expect(signed.body.errors).toBeUndefined();
    expect(signed.body.data.submitVideoGeneration.task.price.amount).toBe("5.00");
    // (A body of its own: each signature is accepted once, and the first test may share this second.)
    const balance = await send("POST", "/graphql", JSON.stringify({ query: "query AfterSubmission { viewer { balance { amount } } }" }));
    expect(balance.body.data.viewer.balance.amount).toBe("5.00");
  });

  it("signs a GET /graphql over its query string", async () => {
    const path = `/graphql?query=${encodeURIComponent("{ viewer { id } }")}`;
    const answer = await send("GET", path, undefined);
    expect(answer.body.errors).toBeUndefined();
    expect(answer.body.data.viewer.id).toMatch(/\S/);
    const otherPath = await fetch(`${stack.url}/graphql?query=${encodeURIComponent("{ viewer { id balance { amount } } }")}`, {
      headers: {
        authorization: `Bearer ${key.key}`,
        "x-service-signature": signRequest(key.webhook_secret, { method: "GET", path, body: "", timestamp: now() }),
      },
    });
    expect(otherPath.status).toBe(200);
    const refused = await otherPath.json();
    expect(refused.data).toEqual({ viewer: null });
    expect(refused.errors[0].extensions).toMatchObject({ code: "unauthorized", http: { status: 401 } });
  });

  it("checks signatures on both REST shims with the same algorithm", async () => {
    const usage = await send("GET", "/api/v1/usage?limit=1", undefined);
    expect(usage.status).toBe(200);
    const unsignedUsage = await send("GET", "/api/v1/usage?limit=1", undefined, { unsigned: true });
    expect(unsignedUsage).toMatchObject({ status: 401, body: { code: 401, message: "Missing request signature" } });
    const vendors = await send("GET", "/openapi/v1/vendors?limit=1", undefined);
    expect(vendors.status).toBe(200);
    const tampered = await send(
      "POST",
      "/openapi/v1/orders",
      JSON.stringify({ product_id: "prd_vm_2c4g", client_order_no: "sig-1", quantity: 1, billing_cycle: "month", customer: "c1" }),
      { signedBody: "{}" },
    );
    expect(tampered).toMatchObject({ status: 401, body: { success: false, error: { code: "unauthorized", message: "Invalid request signature" } } });
  });
});

describe("subscriptions of a key that requires signatures", () => {
  let stack: TestStack;
  afterAll(() => stack?.close());

  it("are refused with 4403: a WebSocket connection carries no per-request signature", async () => {
    stack = await startTestStack();
    const key = await stack.createKey("10", { requireSignature: true });
    const { wsClient, collect } = await import("../support/graphql-ws.ts");
    const client = wsClient(stack.url, { Authorization: `Bearer ${key.key}` });
    const { error, events } = await collect(client, "subscription { tasks { id } }").done;
    await client.dispose();
    expect(events).toEqual([]);
    expect(error).toMatchObject({ code: 4403, reason: "Forbidden" });
  });
});
