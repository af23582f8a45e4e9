/**
 * Results in an S3-compatible bucket through the whole stack (MEDIA_STORE=s3; README "Channel
 * types"; ADR 0023): a Kling task's result is uploaded by the generation process to the bucket
 * (s3rver on loopback) and streamed by the router at its signed `/media/p/` URL, nothing written
 * under DATA_DIR/media.
 */
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { HeadObjectCommand } from "@aws-sdk/client-s3";
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { s3ClientFor } from "../../src/generation/media/s3.ts";
import { startFakeKling, type FakeKling } from "../support/providers/kling.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

describe("provider results in an S3-compatible bucket", () => {
  let t: TestStack;
  let kling: FakeKling;
  let s3: S3rver;
  let dir: string;
  let endpoint: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "switchyard-s3-stack-"));
    s3 = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: path.join(dir, "s3"), configureBuckets: [{ name: "results", configs: [] }] });
    const { port } = await s3.run();
    endpoint = `http://127.0.0.1:${port}`;
    kling = await startFakeKling();
    t = await startTestStack({
      DATA_DIR: path.join(dir, "data"),
      CHANNEL_KEY_SECRET: "0123456789abcdef0123456789abcdef",
      MEDIA_STORE: "s3",
      MEDIA_S3_ENDPOINT: endpoint,
      MEDIA_S3_BUCKET: "results",
      MEDIA_S3_ACCESS_KEY_ID: "S3RVER",
      MEDIA_S3_SECRET_ACCESS_KEY: "S3RVER",
    });
    await t.stack.channels!.setStatus("chn_default", false);
    await t.stack.channels!.add({ name: "kling", type: "kling", baseUrl: kling.url, models: [52], ...kling.credentials });
  });
  afterAll(async () => {
    await t?.close();
    await kling?.close();
    await s3?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("uploads a Kling result to the bucket and the router streams it at the signed URL", async () => {
    const key = await t.createKey("10");
    const submitted = await t.rest("POST", "/api/v1/video/generations", { key: key.key, body: { prompt: "a lighthouse at dusk", model_id: 52, seconds: 5 } });
    expect(submitted.status).toBe(200);
    kling.settle(kling.lastTaskId(), "succeeded");
    const done = await t.waitForTask(key.key, submitted.body.data.task_id, (task) => task.status === 1);
    expect(done.result.startsWith(`${t.url}/media/p/`)).toBe(true);
    const media = await fetch(done.result);
    expect(media.status).toBe(200);
    expect(media.headers.get("content-type")).toBe("video/mp4");
    expect(Buffer.from(await media.arrayBuffer()).equals(kling.content)).toBe(true);
    const hash = new URL(done.result).pathname.split("/").at(-1)!.split(".")[0]!;
    const client = s3ClientFor({
      endpoint: endpoint,
      region: "us-east-1",
      bucket: "results",
      prefix: "media/",
      accessKeyId: "S3RVER",
      secretAccessKey: "S3RVER",
    });
    const head = await client.send(new HeadObjectCommand({ Bucket: "results", Key: `media/${hash}` }));
    expect(head).toMatchObject({ ContentType: "video/mp4", ContentLength: kling.content.length });
    expect(existsSync(path.join(dir, "data", "media"))).toBe(false);
  });
});
