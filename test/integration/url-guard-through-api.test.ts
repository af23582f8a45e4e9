/**
 * The public-HTTPS rule for reference URLs through the API (generation spec part 4 rule 3;
 * DESIGN §2 DNS row): the router and subgraph resolve names with a real DNS server on loopback
 * (DNS_SERVERS), and every refused URL leaves the balance untouched.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDnsServer, type TestDnsServer } from "../support/dns-server.ts";
import { startTestStack, type TestStack } from "../support/stack.ts";

const PUBLIC_HOST = "media.public-cdn.example";

describe("reference URLs through the API with a real DNS server", () => {
  let t: TestStack;
  let dns: TestDnsServer;
  let key: string;

  beforeAll(async () => {
    dns = await startDnsServer({
      [PUBLIC_HOST]: { A: ["93.184.216.34"], AAAA: ["2606:2800:220:1:248:1893:25c8:1946"] },
      "intranet.corp.example": { A: ["10.0.0.1"] },
      "loopback6.corp.example": { AAAA: ["::1"] },
      "mixed.corp.example": { A: ["93.184.216.34"], AAAA: ["::1"] },
    });
    t = await startTestStack({ DNS_SERVERS: dns.address });
    ({ key } = await t.createKey("100"));
  });
  afterAll(async () => {
    await t?.close();
    await dns?.close();
  });

  async function balance(): Promise<number> {
    const usage = await t.rest("GET", "/api/v1/usage", { key });
    expect(usage.status).toBe(200);
    return usage.body.data.balance;
  }

  it("accepts a reference image on a host that resolves to a public address, and charges for it", async () => {
    const before = await balance();
    for (const body of [
      { prompt: "a windmill", model_id: 52, reference_image: `https://${PUBLIC_HOST}/ref.png` },
      { prompt: "a windmill", model_id: 52, reference_images: [`https://${PUBLIC_HOST}/a.png`, `https://${PUBLIC_HOST}:8443/b.png?v=2`] },
    ]) {
      const response = await t.rest("POST", "/api/v1/video/generations", { key, body });
      expect(response.status).toBe(200);
      expect(response.body.data).toMatchObject({ status: 0, amount: 5 });
    }
    expect(await balance()).toBe(before - 10);
  });

  const refused = [
    { name: "a host resolving to 10.0.0.1", url: "https://intranet.corp.example/ref.png" },
    { name: "a host resolving to ::1 in AAAA", url: "https://loopback6.corp.example/ref.png" },
    { name: "a host with a public A but ::1 in AAAA", url: "https://mixed.corp.example/ref.png" },
    { name: "a host that does not resolve", url: "https://nowhere.unknown.example/ref.png" },
    { name: "plain http", url: `http://${PUBLIC_HOST}/ref.png` },
    { name: "a loopback IP literal", url: "https://127.0.0.1/ref.png" },
    { name: "embedded credentials", url: `https://user:pw@${PUBLIC_HOST}/ref.png` },
    { name: "localhost", url: "https://localhost/ref.png" },
  ];

  it.each(refused)("refuses $name as reference_image with 400 and charges nothing", async ({ url }) => {
    const before = await balance();
    const response = await t.rest("POST", "/api/v1/video/generations", { key, body: { prompt: "a windmill", model_id: 52, reference_image: url } });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ code: 400, message: "reference_image must be a public HTTPS URL" });
    expect(await balance()).toBe(before);
  });

  it.each(refused)("refuses $name inside reference_images with the plural field name and charges nothing", async ({ url }) => {
    const before = await balance();
    const response = await t.rest("POST", "/api/v1/images/generations", {
      key,
      body: { prompt: "a windmill", model_id: 45, reference_images: [`https://${PUBLIC_HOST}/fine.png`, url] },
    });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ code: 400, message: "reference_images must be a public HTTPS URL" });
    expect(await balance()).toBe(before);
  });

  it("applies the same rule to the other reference fields: frames, audio and video", async () => {
    const before = await balance();
    const private_ = "https://intranet.corp.example/x";
    const cases = [
      { body: { model_id: 39, frame_start: private_ }, field: "frame_start" },
      { body: { model_id: 39, frame_end: private_ }, field: "frame_end" },
      { body: { model_id: 51, reference_audio: private_ }, field: "reference_audio" },
      { body: { model_id: 52, reference_video: private_ }, field: "reference_video" },
      { body: { model_id: 52, reference_videos: [private_] }, field: "reference_videos" },
    ];
    for (const { body, field } of cases) {
      const response = await t.rest("POST", "/api/v1/video/generations", { key, body: { prompt: "a windmill", ...body } });
      expect({ field, status: response.status, body: response.body }).toEqual({ field, status: 400, body: { code: 400, message: `${field} must be a public HTTPS URL` } });
    }
    expect(await balance()).toBe(before);
  });
});
