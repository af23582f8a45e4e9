/**
 * The public-HTTPS rule for reference URLs through the API (docs/api/generation.md §4 rule 3;
 * docs/architecture.md §2 DNS row): the router and subgraph resolve names with a real DNS server on loopback
 * (DNS_SERVERS), and every refused URL leaves the balance untouched. The same guard checks CDN
 * origins given as host names (cloud `POST /domains`, GraphQL `createDomain`).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { topUpCustomer } from "../../src/cloud/customers.ts";
import { parseYuan } from "../../src/money.ts";
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
      "origin.public-cdn.example": { A: ["93.184.216.34"] },
      "origin.corp.example": { A: ["127.0.0.1"] },
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
      expect({ field, status: response.status, body: response.body }).toEqual({
        field,
        status: 400,
        body: { code: 400, message: `${field} must be a public HTTPS URL` },
      });
    }
    expect(await balance()).toBe(before);
  });

  describe("CDN origins given as host names", () => {
    let orderId: string;
    let cloudKey: string;
    const cloud = (path: string, body?: unknown) => t.rest(body === undefined ? "GET" : "POST", `/openapi/v1${path}`, { key: cloudKey, body });
    const CREATE_DOMAIN = `mutation ($input: CreateDomainInput!) { createDomain(input: $input) { domain { domain origin { type address } } } }`;
    let seq = 0;
    const domainBody = (address: string, type = "domain") => ({
      domain: `site${++seq}.shop.example`,
      origin: { type, address, port: 443 },
      protocol: "https",
      order_id: orderId,
      customer_id: "cust-1",
    });

    beforeAll(async () => {
      const created = await t.createKey("0");
      cloudKey = created.key;
      await topUpCustomer(t.stack.db!, { accountId: created.account_id, customerId: "cust-1", amount: parseYuan("100") });
      const order = await cloud("/orders", {
        client_order_no: "origin-check-1",
        product_id: "prd_cdn_standard",
        quantity: 1,
        billing_cycle: "monthly",
        customer: { customer_id: "cust-1" },
        metadata: { domain: "www.shop.example" },
      });
      expect(order.status).toBe(201);
      orderId = order.body.data.order_id;
      await t.waitForAccount(
        cloudKey,
        () => cloud(`/orders/${orderId}`),
        (r) => r.body.data.status === "active",
      );
    });

    it("accepts an origin host name that resolves to a public address, through REST and GraphQL", async () => {
      const rest = await cloud("/domains", domainBody("origin.public-cdn.example"));
      expect(rest.status, JSON.stringify(rest.body)).toBe(201);
      expect(rest.body.data.origin).toMatchObject({ type: "domain", address: "origin.public-cdn.example" });
      const { origin, ...rest2 } = domainBody("origin.public-cdn.example");
      const gql = await t.graphql(CREATE_DOMAIN, { input: { domain: rest2.domain, origin, protocol: "https", orderId, customerId: "cust-1" } }, cloudKey);
      expect(gql.body.errors).toBeUndefined();
      expect(gql.body.data.createDomain.domain.origin).toEqual({ type: "domain", address: "origin.public-cdn.example" });
    });

    it.each([
      ["resolves to 127.0.0.1", "origin.corp.example"],
      ["does not resolve", "origin.nowhere.example"],
    ])("refuses an origin host name that %s with 422 validation_failed on origin.address, as a loopback IP literal, storing nothing", async (_what, host) => {
      const body = domainBody(host);
      const rest = await cloud("/domains", body);
      expect(rest.status).toBe(422);
      expect(rest.body.error).toEqual({
        code: "validation_failed",
        message: "origin.address must be a hostname other than the domain itself that resolves only to public addresses",
        details: { field: "origin.address" },
      });
      expect(JSON.stringify(rest.body)).not.toContain("127.0.0.1");
      const literal = await cloud("/domains", domainBody("127.0.0.1", "ip"));
      expect([literal.status, literal.body.error.code, literal.body.error.details]).toEqual([422, "validation_failed", { field: "origin.address" }]);

      const gql = await t.graphql(
        CREATE_DOMAIN,
        { input: { domain: `gql-${body.domain}`, origin: body.origin, protocol: "https", orderId, customerId: "cust-1" } },
        cloudKey,
      );
      expect(gql.body.errors?.[0]).toMatchObject({ extensions: { code: "validation_failed", http: { status: 422 }, field: "origin.address" } });
      for (const name of [body.domain, `gql-${body.domain}`]) expect((await cloud(`/domains/${name}/status`)).status).toBe(404);
    });
  });
});
