/**
 * Authentication, task visibility and request ids through the router (docs/api/generation.md §5,
 * §4 "GET /api/v1/tasks/{task_id}", §7; docs/architecture.md §4 order of checks).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, setKeyStatus } from "../../src/auth/keys.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

const VIDEO_BODY = { prompt: "a quiet harbour", model_id: 52, seconds: 5 };
const IMAGE_BODY = { prompt: "a quiet harbour", model_id: 45, count: 1 };
const UNAUTHENTICATED = { code: 401, message: "Invalid or missing API key" };
const DISABLED = { code: 403, message: "API key is disabled" };

describe("authentication and task visibility", () => {
  let t: TestStack;
  /** A task owned by `owner`, created once for the visibility checks. */
  let owner: { id: string; key: string; account_id: string };
  let ownerTaskId: string;

  beforeAll(async () => {
    t = await startTestStack();
    owner = await t.createKey("20");
    const submitted = await t.rest("POST", "/api/v1/video/generations", { key: owner.key, body: VIDEO_BODY });
    expect(submitted.status).toBe(200);
    ownerTaskId = submitted.body.data.task_id;
  });
  afterAll(() => t?.close());

  /** Every endpoint that needs a key, with a body that would otherwise be accepted. */
  const endpoints = () =>
    [
      { method: "POST", path: "/api/v1/video/generations", body: VIDEO_BODY },
      { method: "POST", path: "/api/v1/images/generations", body: IMAGE_BODY },
      { method: "GET", path: `/api/v1/tasks/${ownerTaskId}` },
      { method: "GET", path: "/api/v1/usage" },
    ] as { method: string; path: string; body?: unknown }[];

  it("answers 401 on every authenticated endpoint when the key is missing", async () => {
    for (const endpoint of endpoints()) {
      const response = await t.rest(endpoint.method, endpoint.path, { body: endpoint.body });
      expect({ endpoint: endpoint.path, status: response.status, body: response.body }).toEqual({
        endpoint: endpoint.path,
        status: 401,
        body: UNAUTHENTICATED,
      });
    }
  });

  it("answers 401 on every authenticated endpoint when the key is unknown", async () => {
    for (const endpoint of endpoints()) {
      const response = await t.rest(endpoint.method, endpoint.path, { body: endpoint.body, key: "sy_not-a-real-key-0123456789" });
      expect({ endpoint: endpoint.path, status: response.status, body: response.body }).toEqual({
        endpoint: endpoint.path,
        status: 401,
        body: UNAUTHENTICATED,
      });
    }
  });

  it("answers 401 when the Authorization header has a scheme but no key", async () => {
    const response = await t.rest("GET", "/api/v1/usage", { headers: { authorization: "Bearer " } });
    expect(response.status).toBe(401);
    expect(response.body).toEqual(UNAUTHENTICATED);
  });

  it("answers 403 on every authenticated endpoint for a disabled key, which then charges nothing", async () => {
    const key = await t.createKey("10");
    await setKeyStatus(t.stack.db!, key.id, "disabled");
    for (const endpoint of endpoints()) {
      const response = await t.rest(endpoint.method, endpoint.path, { body: endpoint.body, key: key.key });
      expect({ endpoint: endpoint.path, status: response.status, body: response.body }).toEqual({ endpoint: endpoint.path, status: 403, body: DISABLED });
    }
    // Disabled means refused before anything was written: enable it again and look.
    await setKeyStatus(t.stack.db!, key.id, "active");
    const usage = await t.rest("GET", "/api/v1/usage", { key: key.key });
    expect(usage.status).toBe(200);
    expect(usage.body.data).toMatchObject({ balance: 10, spent: 0, tasks: [] });
  });

  it("checks the key before parsing the body: invalid JSON is 401 without a key, 403 with a disabled one, 400 with a good one", async () => {
    const raw = '{"prompt": "unterminated';
    const anonymous = await t.rest("POST", "/api/v1/video/generations", { rawBody: raw });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual(UNAUTHENTICATED);

    const disabled = await t.createKey("1");
    await setKeyStatus(t.stack.db!, disabled.id, "disabled");
    const refused = await t.rest("POST", "/api/v1/images/generations", { rawBody: raw, key: disabled.key });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual(DISABLED);

    for (const path of ["/api/v1/video/generations", "/api/v1/images/generations"]) {
      const parsed = await t.rest("POST", path, { rawBody: raw, key: owner.key });
      expect(parsed.status).toBe(400);
      expect(parsed.body).toEqual({ code: 400, message: "Request body must be valid JSON" });
    }
  });

  it("checks the key before the field types: a wrongly typed body without a key is 401", async () => {
    const response = await t.rest("POST", "/api/v1/video/generations", { body: { prompt: 5 } });
    expect(response.status).toBe(401);
    expect(response.body).toEqual(UNAUTHENTICATED);
  });

  it("shows a task to the key that created it and 404 to any other key, via REST and GraphQL", async () => {
    const own = await t.rest("GET", `/api/v1/tasks/${ownerTaskId}`, { key: owner.key });
    expect(own.status).toBe(200);
    expect(own.body.data.task_id).toBe(ownerTaskId);

    const query = "query ($id: ID!) { task(id: $id) { id statusCode } }";
    const mine = await t.graphql(query, { id: ownerTaskId }, owner.key);
    expect(mine.body.errors).toBeUndefined();
    expect(mine.body.data.task.id).toBe(ownerTaskId);

    const otherAccount = await t.createKey("5");
    // Visibility is per key, not per account: a second key on the owner's account is a stranger too.
    const sameAccount = await createKey(t.stack.db!, { name: "second key", accountId: owner.account_id });
    for (const stranger of [otherAccount, sameAccount]) {
      const rest = await t.rest("GET", `/api/v1/tasks/${ownerTaskId}`, { key: stranger.key });
      expect(rest.status).toBe(404);
      expect(rest.body).toEqual({ code: 404, message: "Task not found" });

      const theirs = await t.graphql(query, { id: ownerTaskId }, stranger.key);
      expect(theirs.body.data?.task ?? null).toBeNull();
      expect(theirs.body.errors).toHaveLength(1);
      expect(theirs.body.errors[0].message).toBe("Task not found");
      expect(theirs.body.errors[0].extensions.code).toBe("task_not_found");

      // Their usage does not list it either.
      const usage = await t.rest("GET", "/api/v1/usage", { key: stranger.key });
      expect(usage.status).toBe(200);
      expect(usage.body.data.tasks).toEqual([]);
    }
  });

  it("answers 404 for a task id that does not exist", async () => {
    const response = await t.rest("GET", "/api/v1/tasks/task_doesnotexist000", { key: owner.key });
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ code: 404, message: "Task not found" });
  });

  it("serves /health without a key, listing the six models", async () => {
    const response = await t.rest("GET", "/health");
    expect(response.status).toBe(200);
    expect(response.body.status).toBe("ok");
    const models = response.body.models as any[];
    expect(models.map((m) => m.model_id).sort((a, b) => a - b)).toEqual([39, 45, 51, 52, 67, 69]);
    for (const model of models) {
      expect(typeof model.model_name).toBe("string");
      expect(model.kind).toBe(model.model_id === 45 ? "image" : "video");
    }
  });

  it("puts an X-Request-Id on every response, success or error, REST or GraphQL", async () => {
    const responses = [
      await t.rest("GET", "/health"),
      await t.rest("GET", "/api/v1/usage"),
      await t.rest("GET", "/api/v1/usage", { key: owner.key }),
      await t.rest("GET", `/api/v1/tasks/${ownerTaskId}`, { key: owner.key }),
      await t.rest("POST", "/api/v1/video/generations", { key: owner.key, rawBody: "nope" }),
      await t.rest("GET", "/api/v1/no-such-route"),
    ];
    const gql = await fetch(`${t.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: "{ models { id } }" }),
    });
    await gql.text();
    const ids = [...responses.map((r) => r.headers.get("x-request-id")), gql.headers.get("x-request-id")];
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9._:-]{8,80}$/);
    // Each request gets its own.
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("echoes a valid incoming X-Request-Id and replaces an invalid one", async () => {
    const echoed = await t.rest("GET", "/api/v1/usage", { key: owner.key, headers: { "x-request-id": "client-req.42:abc" } });
    expect(echoed.status).toBe(200);
    expect(echoed.headers.get("x-request-id")).toBe("client-req.42:abc");

    const onError = await t.rest("GET", "/api/v1/usage", { headers: { "x-request-id": "client-req-401" } });
    expect(onError.status).toBe(401);
    expect(onError.headers.get("x-request-id")).toBe("client-req-401");

    const invalid = "not valid; has spaces";
    const replaced = await t.rest("GET", "/health", { headers: { "x-request-id": invalid } });
    const id = replaced.headers.get("x-request-id");
    expect(id).not.toBe(invalid);
    expect(id).toMatch(/^[A-Za-z0-9._:-]{8,80}$/);
  });
});
