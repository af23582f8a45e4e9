import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type TestStack } from "../support/stack.ts";

describe("a video task through the router with the simulator", () => {
  let t: TestStack;
  beforeAll(async () => {
    t = await startTestStack();
  });
  afterAll(() => t.close());

  it("takes a submission to status 1 with a result URL that opens, and usage shows the charge", async () => {
    const { key } = await t.createKey("10");
    const submitted = await t.rest("POST", "/api/v1/video/generations", { key, body: { prompt: "a cat", model_id: 69, seconds: 6 } });
    expect(submitted.status).toBe(200);
    expect(submitted.body.data).toMatchObject({ model_id: 69, status: 0, amount: 1.125 });
    const task = await t.waitForTask(key, submitted.body.data.task_id);
    expect(task.status).toBe(1);
    const media = await fetch(task.result);
    expect(media.status).toBe(200);
    expect(media.headers.get("content-type")).toBe("video/mp4");
    const usage = await t.rest("GET", "/api/v1/usage", { key });
    expect(usage.body.data).toMatchObject({ balance: 8.875, spent: 1.125, billed_seconds: 6, billed_images: 0 });
  });
});
