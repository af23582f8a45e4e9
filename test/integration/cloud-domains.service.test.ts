/**
 * CDN domains and cache purges at the service layer (docs/api/cloud.md §4 `/domains`,
 * `/domains/{domain}/status`, `/domains/{domain}/purge`; docs/architecture.md §8; issue 3 item 5), on a real
 * SQLite database. Time is driven by moving rows' `created_at` into the past, never by sleeping.
 */
import { appErrorOf as failure } from "../support/errors.ts";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, type Db } from "../../src/db/index.ts";
import { openTestDb, type TestDb } from "../support/db.ts";
import { createDomain, getDomain, getDomainsByNames, type CreateDomainInput } from "../../src/cloud/domains.ts";
import { getPurgeTask, listPurgeTasks, purgeDomain, type PurgeInput } from "../../src/cloud/purge.ts";
import { createUrlGuard, type UrlGuard } from "../../src/net/url-guard.ts";
import { startDnsServer, type TestDnsServer } from "../support/dns-server.ts";

const STEP = 60_000;
const T0 = "2025-01-01T00:00:00.000Z";

let db: Db;
let testDb: TestDb;
let seq = 0;
/** A real DNS server on loopback and the URL guard asking it, as DNS_SERVERS sets up in production. */
let dns: TestDnsServer;
let guard: UrlGuard;
const checkOriginHost = (host: string) => guard.checkHost(host);

interface Tenant {
  accountId: string;
  keyId: string;
  caller: { keyId: string; accountId: string };
}

async function insertTenant(): Promise<Tenant> {
  const n = ++seq;
  const accountId = `acc_test${n}`;
  const keyId = `key_test${n}`;
  await db("accounts").insert({ id: accountId, name: `tenant ${n}`, balance: 0, credit_line: 0, created_at: T0 });
  await db("api_keys").insert({
    id: keyId,
    account_id: accountId,
    name: `key ${n}`,
    key_hash: randomBytes(32).toString("hex"),
    key_prefix: "sy_test",
    status: "active",
    scopes: "[]",
    created_at: T0,
  });
  return { accountId, keyId, caller: { keyId, accountId } };
}

async function insertCatalog(): Promise<void> {
  await db("vendors").insert({ id: "ven_test", name: "Test vendor", status: "active", created_at: T0 });
  const product = (id: string, category: string) => ({
    id,
    vendor_id: "ven_test",
    category,
    name: id,
    status: "available",
    billing_cycles: JSON.stringify([{ cycle: "monthly", months: 1, price: 1000 }]),
    stock: null,
    required_fields: "[]",
    created_at: T0,
    updated_at: T0,
  });
  await db("products").insert([product("prod_cdn", "cdn"), product("prod_vm", "compute")]);
}

async function insertOrder(tenant: Tenant, options: { status?: string; productId?: string; customerId?: string } = {}): Promise<string> {
  const id = `ord_test${++seq}`;
  await db("orders").insert({
    id,
    account_id: tenant.accountId,
    key_id: tenant.keyId,
    client_order_no: `client-${id}`,
    product_id: options.productId ?? "prod_cdn",
    quantity: 1,
    billing_cycle: "monthly",
    customer_id: options.customerId ?? "cust_1",
    metadata: JSON.stringify({ domain: "www.example.com" }),
    amount: 1000,
    payment_status: "paid",
    provisioning_status: options.status ?? "active",
    status: options.status ?? "active",
    created_at: T0,
    updated_at: T0,
  });
  return id;
}

/** Moves a domain's creation `steps` steps (plus a little) into the past. */
async function ageDomain(domain: string, steps: number): Promise<void> {
  const at = new Date(Date.now() - steps * STEP - 1_000).toISOString();
  await db("domains").where("domain", domain).update({ created_at: at, updated_at: at });
}

async function agePurge(id: string, steps: number): Promise<void> {
  await db("purge_tasks")
    .where("id", id)
    .update({ created_at: new Date(Date.now() - steps * STEP - 1_000).toISOString() });
}

/** The AppError a promise rejects with. */

let alice: Tenant;
let bob: Tenant;
let aliceOrder: string;
let domainSeq = 0;
const freshName = (prefix = "site") => `${prefix}${++domainSeq}.example.com`;

/** A valid create-domain input with `overrides` (values of any type: the service checks at run time). */
function body(overrides: Record<string, unknown> = {}): CreateDomainInput {
  return {
    domain: freshName(),
    origin: { type: "ip", address: "8.8.8.8", port: 8080 },
    protocol: "https",
    orderId: aliceOrder,
    customerId: "cust_1",
    ...overrides,
  };
}

beforeAll(async () => {
  dns = await startDnsServer({
    "origin.example.net": { A: ["93.184.216.34"] },
    "origin6.example.net": { AAAA: ["2606:2800:220:1:248:1893:25c8:1946"] },
    "loopback-origin.example.net": { A: ["127.0.0.1"] },
    "intranet-origin.example.net": { A: ["93.184.216.34", "10.0.0.7"] },
    "mapped-origin.example.net": { AAAA: ["::ffff:192.168.0.1"] },
  });
  guard = createUrlGuard({ dnsServers: [dns.address], timeoutMs: 1_000 });
  testDb = await openTestDb("switchyard-domains-");
  db = testDb.db;
  await migrate(db);
  await insertCatalog();
  alice = await insertTenant();
  bob = await insertTenant();
  aliceOrder = await insertOrder(alice);
});

afterAll(async () => {
  await testDb?.close();
  await dns?.close();
});

describe("creating a domain", () => {
  it("creates a domain with a normalized name, a CNAME and every status pending", async () => {
    const { domain, replayed } = await createDomain(db, alice.caller, body({ domain: "WWW.Shop-One.Example.COM." }), { stepMs: STEP, checkOriginHost });
    expect(replayed).toBe(false);
    expect(domain).toMatchObject({
      domain: "www.shop-one.example.com",
      accountId: alice.accountId,
      orderId: aliceOrder,
      customerId: "cust_1",
      origin: { type: "ip", address: "8.8.8.8", port: 8080 },
      protocol: "https",
      cname: "www.shop-one.example.com.cdn.switchyard.example",
      reviewStatus: "pending",
      resolutionStatus: "pending",
      certificateStatus: "none",
      accelerationStatus: "pending",
      errorStatus: "none",
    });
    expect(domain.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    const read = await getDomain(db, alice.caller, "www.SHOP-ONE.example.com", STEP);
    expect(read.domain).toBe("www.shop-one.example.com");
  });

  it("accepts a hostname origin without a port and an IPv6 origin in canonical form", async () => {
    const byName = await createDomain(db, alice.caller, body({ origin: { type: "domain", address: "Origin.Example.NET" }, protocol: "http" }), {
      stepMs: STEP,
      checkOriginHost,
    });
    expect(byName.domain.origin).toEqual({ type: "domain", address: "origin.example.net", port: null });
    const byV6 = await createDomain(db, alice.caller, body({ origin: { type: "ip", address: "2606:4700:0:0:0:0:0:1111", port: null } }), {
      stepMs: STEP,
      checkOriginHost,
    });
    expect(byV6.domain.origin).toEqual({ type: "ip", address: "2606:4700::1111", port: null });
  });

  it("accepts a hostname origin whose DNS answers are public, A or AAAA only", async () => {
    const v6 = await createDomain(db, alice.caller, body({ origin: { type: "domain", address: "origin6.example.net", port: 443 } }), {
      stepMs: STEP,
      checkOriginHost,
    });
    expect(v6.domain.origin).toEqual({ type: "domain", address: "origin6.example.net", port: 443 });
  });

  it.each([
    ["resolves to 127.0.0.1", "loopback-origin.example.net"],
    ["resolves to a public and a private address", "intranet-origin.example.net"],
    ["resolves to an IPv4-mapped private address", "mapped-origin.example.net"],
    ["does not resolve", "nowhere.example.net"],
  ])("refuses a hostname origin that %s like a private IP literal: 422 origin.address, nothing stored", async (_what, host) => {
    const request = body({ origin: { type: "domain", address: host } });
    const error = await failure(createDomain(db, alice.caller, request, { stepMs: STEP, checkOriginHost }));
    expect([error.status, error.code, error.details]).toEqual([422, "validation_failed", { field: "origin.address" }]);
    expect(error.message).toBe("origin.address must be a hostname other than the domain itself that resolves only to public addresses");
    expect(JSON.stringify(error)).not.toMatch(/127\.0\.0\.1|10\.0\.0\.7|192\.168/);
    expect(
      await db("domains")
        .where("domain", request.domain as string)
        .first(),
    ).toBeUndefined();
    // The same 422 as an IP literal origin that is not public.
    const literal = await failure(createDomain(db, alice.caller, body({ origin: { type: "ip", address: "127.0.0.1" } }), { stepMs: STEP, checkOriginHost }));
    expect([literal.status, literal.code, literal.details]).toEqual([422, "validation_failed", { field: "origin.address" }]);
  });

  it("refuses a hostname origin when DNS cannot be asked (fails closed)", async () => {
    const unreachable = createUrlGuard({ dnsServers: ["127.0.0.1:9"], timeoutMs: 100 });
    const error = await failure(
      createDomain(db, alice.caller, body({ origin: { type: "domain", address: "origin.example.net" } }), {
        stepMs: STEP,
        checkOriginHost: (host) => unreachable.checkHost(host),
      }),
    );
    expect(error.details).toEqual({ field: "origin.address" });
  });

  it("is 400 invalid_request when the body is not an object", async () => {
    for (const bad of [null, "x", [1], 3]) {
      const error = await failure(createDomain(db, alice.caller, bad as CreateDomainInput, { stepMs: STEP, checkOriginHost }));
      expect(error.code).toBe("invalid_request");
      expect(error.status).toBe(400);
    }
  });

  const invalidCases: [string, Record<string, unknown>, string][] = [
    ["a missing domain", { domain: undefined }, "domain"],
    ["a non-string domain", { domain: 42 }, "domain"],
    ["a single-label domain", { domain: "localhost" }, "domain"],
    ["a wildcard domain", { domain: "*.example.com" }, "domain"],
    ["a domain with an underscore", { domain: "bad_name.example.com" }, "domain"],
    ["a label starting with a hyphen", { domain: "-bad.example.com" }, "domain"],
    ["a label of 64 characters", { domain: `${"a".repeat(64)}.example.com` }, "domain"],
    ["a domain too long for its CNAME", { domain: `${Array.from({ length: 4 }, () => "a".repeat(60)).join(".")}.com` }, "domain"],
    ["an IP address as domain", { domain: "1.2.3.4" }, "domain"],
    ["a domain inside the CNAME zone", { domain: "x.cdn.switchyard.example" }, "domain"],
    ["a domain with spaces", { domain: " www.example.com" }, "domain"],
    ["a missing origin", { origin: undefined }, "origin"],
    ["an origin that is a string", { origin: "8.8.8.8" }, "origin"],
    ["an unknown origin type", { origin: { type: "cname", address: "8.8.8.8" } }, "origin.type"],
    ["a private origin IP", { origin: { type: "ip", address: "10.0.0.1" } }, "origin.address"],
    ["a loopback origin IP", { origin: { type: "ip", address: "127.0.0.1" } }, "origin.address"],
    ["a legacy-form origin IP", { origin: { type: "ip", address: "134744072" } }, "origin.address"],
    ["a link-local IPv6 origin", { origin: { type: "ip", address: "fe80::1" } }, "origin.address"],
    ["a hostname for an ip origin", { origin: { type: "ip", address: "origin.example.net" } }, "origin.address"],
    ["an invalid origin hostname", { origin: { type: "domain", address: "not a host" } }, "origin.address"],
    ["an origin that is the domain itself", { domain: "loop.example.com", origin: { type: "domain", address: "loop.example.com" } }, "origin.address"],
    ["a missing origin address", { origin: { type: "ip" } }, "origin.address"],
    ["port 0", { origin: { type: "ip", address: "8.8.8.8", port: 0 } }, "origin.port"],
    ["port 65536", { origin: { type: "ip", address: "8.8.8.8", port: 65536 } }, "origin.port"],
    ["a fractional port", { origin: { type: "ip", address: "8.8.8.8", port: 80.5 } }, "origin.port"],
    ["a string port", { origin: { type: "ip", address: "8.8.8.8", port: "80" } }, "origin.port"],
    ["an unknown protocol", { protocol: "ftp" }, "protocol"],
    ["an upper-case protocol", { protocol: "HTTPS" }, "protocol"],
    ["a missing order_id", { orderId: undefined }, "order_id"],
    ["an empty order_id", { orderId: "" }, "order_id"],
    ["a missing customer_id", { customerId: undefined }, "customer_id"],
    ["a numeric customer_id", { customerId: 7 }, "customer_id"],
  ];
  it.each(invalidCases)("is 422 validation_failed for %s", async (_name, overrides, field) => {
    const error = await failure(createDomain(db, alice.caller, body(overrides), { stepMs: STEP, checkOriginHost }));
    expect(error.code).toBe("validation_failed");
    expect(error.status).toBe(422);
    expect(error.details).toEqual({ field });
  });

  it("is 422 on customer_id when the order belongs to another customer", async () => {
    const error = await failure(createDomain(db, alice.caller, body({ customerId: "cust_other" }), { stepMs: STEP, checkOriginHost }));
    expect(error.status).toBe(422);
    expect(error.details).toEqual({ field: "customer_id" });
  });

  it("is 404 Order not found for an unknown order and for another account's order", async () => {
    const bobOrder = await insertOrder(bob);
    for (const orderId of ["ord_missing", bobOrder]) {
      const error = await failure(createDomain(db, alice.caller, body({ orderId: orderId }), { stepMs: STEP, checkOriginHost }));
      expect(error.code).toBe("not_found");
      expect(error.status).toBe(404);
      expect(error.message).toBe("Order not found");
    }
  });

  it("is 409 conflict for an order that is not active", async () => {
    for (const status of ["unpaid", "provisioning", "failed"]) {
      const orderId = await insertOrder(alice, { status });
      const error = await failure(createDomain(db, alice.caller, body({ orderId: orderId }), { stepMs: STEP, checkOriginHost }));
      expect(error.code).toBe("conflict");
      expect(error.status).toBe(409);
    }
  });

  it("is 409 conflict for an active order of a product that is not CDN", async () => {
    const orderId = await insertOrder(alice, { productId: "prod_vm" });
    const error = await failure(createDomain(db, alice.caller, body({ orderId: orderId }), { stepMs: STEP, checkOriginHost }));
    expect(error.code).toBe("conflict");
    expect(error.message).toMatch(/CDN/);
  });

  it("is 409 Domain already exists for a duplicate, in the same account or another, in any case", async () => {
    const name = freshName("dup");
    await createDomain(db, alice.caller, body({ domain: name }), { stepMs: STEP, checkOriginHost });
    const again = await failure(createDomain(db, alice.caller, body({ domain: name.toUpperCase() }), { stepMs: STEP, checkOriginHost }));
    expect(again.code).toBe("conflict");
    expect(again.message).toBe("Domain already exists");
    const bobOrder = await insertOrder(bob);
    const other = await failure(createDomain(db, bob.caller, body({ domain: name, orderId: bobOrder }), { stepMs: STEP, checkOriginHost }));
    expect(other.code).toBe("conflict");
    expect(other.message).toBe("Domain already exists");
  });

  it("replays the first result for the same Idempotency-Key and body, and rejects another body", async () => {
    const request = body();
    const first = await createDomain(db, alice.caller, request, { idempotencyKey: "idem-domain-1", stepMs: STEP, checkOriginHost });
    const second = await createDomain(db, alice.caller, { ...request }, { idempotencyKey: "idem-domain-1", stepMs: STEP, checkOriginHost });
    expect(first.replayed).toBe(false);
    expect(second.replayed).toBe(true);
    expect(second.domain).toEqual(first.domain);
    expect(
      await db("domains")
        .where("domain", request.domain as string)
        .count({ n: "*" }),
    ).toEqual([{ n: 1 }]);
    const conflict = await failure(createDomain(db, alice.caller, body(), { idempotencyKey: "idem-domain-1", stepMs: STEP, checkOriginHost }));
    expect(conflict.code).toBe("conflict");
    // Without a key the same body is a duplicate domain, not a replay.
    const duplicate = await failure(createDomain(db, alice.caller, request, { stepMs: STEP, checkOriginHost }));
    expect(duplicate.message).toBe("Domain already exists");
  });
});

describe("reading a domain", () => {
  it("is 404 Domain not found for an unknown domain and for another account's domain", async () => {
    const { domain } = await createDomain(db, alice.caller, body(), { stepMs: STEP, checkOriginHost });
    for (const [caller, name] of [
      [bob.caller, domain.domain],
      [alice.caller, "unknown.example.com"],
      [alice.caller, "not a domain"],
    ] as const) {
      const error = await failure(getDomain(db, caller, name, STEP));
      expect(error.code).toBe("not_found");
      expect(error.message).toBe("Domain not found");
    }
  });

  it("reads several domains at once in the order asked, null for unknown or foreign ones", async () => {
    const a = (await createDomain(db, alice.caller, body(), { stepMs: STEP, checkOriginHost })).domain.domain;
    const b = (await createDomain(db, alice.caller, body(), { stepMs: STEP, checkOriginHost })).domain.domain;
    const records = await getDomainsByNames(db, alice.caller, [b, "nope.example.com", a.toUpperCase(), b], STEP);
    expect(records.map((r) => r?.domain ?? null)).toEqual([b, null, a, b]);
    expect(await getDomainsByNames(db, bob.caller, [a, b], STEP)).toEqual([null, null]);
    expect(await getDomainsByNames(db, alice.caller, [], STEP)).toEqual([]);
  });

  it("advances an https domain through review, resolution, certificate and acceleration step by step", async () => {
    const { domain } = await createDomain(db, alice.caller, body({ protocol: "https" }), { stepMs: STEP, checkOriginHost });
    const expected = [
      ["pending", "pending", "none", "pending"],
      ["approved", "pending", "issuing", "pending"],
      ["approved", "resolved", "issuing", "deploying"],
      ["approved", "resolved", "issued", "online"],
      ["approved", "resolved", "issued", "online"],
    ];
    for (let step = 0; step < expected.length; step++) {
      await ageDomain(domain.domain, step);
      const read = await getDomain(db, alice.caller, domain.domain, STEP);
      expect([read.reviewStatus, read.resolutionStatus, read.certificateStatus, read.accelerationStatus], `step ${step}`).toEqual(expected[step]);
      expect(read.errorStatus).toBe("none");
      expect(Date.parse(read.updatedAt)).toBe(Date.parse(read.createdAt) + Math.min(step, 3) * STEP);
    }
  });

  it("never issues a certificate for an http domain", async () => {
    const { domain } = await createDomain(db, alice.caller, body({ protocol: "http" }), { stepMs: STEP, checkOriginHost });
    for (const step of [0, 1, 2, 3, 10]) {
      await ageDomain(domain.domain, step);
      expect((await getDomain(db, alice.caller, domain.domain, STEP)).certificateStatus).toBe("none");
    }
    expect((await getDomain(db, alice.caller, domain.domain, STEP)).accelerationStatus).toBe("online");
  });

  it("rejects a domain whose first label is reject (the sandbox hook)", async () => {
    const { domain } = await createDomain(db, alice.caller, body({ domain: "reject.example.org" }), { stepMs: STEP, checkOriginHost });
    expect(domain.reviewStatus).toBe("pending");
    for (const step of [1, 2, 5]) {
      await ageDomain(domain.domain, step);
      const read = await getDomain(db, alice.caller, domain.domain, STEP);
      expect(read).toMatchObject({
        reviewStatus: "rejected",
        resolutionStatus: "pending",
        certificateStatus: "none",
        accelerationStatus: "offline",
        errorStatus: "review_rejected",
      });
    }
  });

  it("derives statuses from the step length given at read time (state survives restarts)", async () => {
    const { domain } = await createDomain(db, alice.caller, body(), { stepMs: STEP, checkOriginHost });
    await ageDomain(domain.domain, 1);
    expect((await getDomain(db, alice.caller, domain.domain, STEP)).reviewStatus).toBe("approved");
    expect((await getDomain(db, alice.caller, domain.domain, 100 * STEP)).reviewStatus).toBe("pending");
    expect((await getDomain(db, alice.caller, domain.domain, 1)).accelerationStatus).toBe("online");
  });
});

describe("purging a domain", () => {
  let site: string;
  let httpSite: string;

  beforeAll(async () => {
    site = (await createDomain(db, alice.caller, body({ protocol: "https" }), { stepMs: STEP, checkOriginHost })).domain.domain;
    httpSite = (await createDomain(db, alice.caller, body({ protocol: "http" }), { stepMs: STEP, checkOriginHost })).domain.domain;
  });

  it("creates a url purge task with normalized, de-duplicated targets", async () => {
    const { task, replayed } = await purgeDomain(
      db,
      alice.caller,
      site.toUpperCase(),
      { type: "url", targets: [`https://${site}/a.png`, `HTTPS://${site.toUpperCase()}/a.png`, `http://${site}/b?v=1`] },
      { stepMs: STEP },
    );
    expect(replayed).toBe(false);
    expect(task.id).toMatch(/^purge_/);
    expect(task).toMatchObject({ domain: site, type: "url", targets: [`https://${site}/a.png`, `http://${site}/b?v=1`], status: "pending", completedAt: null });
    expect(await getPurgeTask(db, alice.caller, task.id, STEP)).toEqual(task);
  });

  it("accepts directories as absolute URLs or as paths, made absolute with the domain's protocol", async () => {
    const { task } = await purgeDomain(db, alice.caller, httpSite, { type: "directory", targets: ["/images/", `https://${httpSite}/css/`] }, { stepMs: STEP });
    expect(task.targets).toEqual([`http://${httpSite}/images/`, `https://${httpSite}/css/`]);
  });

  it("is 400 invalid_request when the body is not an object", async () => {
    const error = await failure(purgeDomain(db, alice.caller, site, ["x"] as PurgeInput, { stepMs: STEP }));
    expect(error.code).toBe("invalid_request");
  });

  const purgeCases = (): [string, unknown, string][] => [
    ["a missing type", { targets: [`https://${site}/a`] }, "type"],
    ["an unknown type", { type: "all", targets: [`https://${site}/a`] }, "type"],
    ["missing targets", { type: "url" }, "targets"],
    ["targets that are not an array", { type: "url", targets: `https://${site}/a` }, "targets"],
    ["empty targets", { type: "url", targets: [] }, "targets"],
    ["101 targets", { type: "url", targets: Array.from({ length: 101 }, (_, i) => `https://${site}/${i}`) }, "targets"],
    ["a url on another host", { type: "url", targets: [`https://${site}/a`, "https://other.example.com/a"] }, "targets[1]"],
    ["a relative url", { type: "url", targets: [`https://${site}/a`, `https://${site}/b`, "/c.png"] }, "targets[2]"],
    ["an ftp url", { type: "url", targets: [`ftp://${site}/a`] }, "targets[0]"],
    ["a url with credentials", { type: "url", targets: [`https://user:pw@${site}/a`] }, "targets[0]"],
    ["a url with a fragment", { type: "url", targets: [`https://${site}/a#top`] }, "targets[0]"],
    ["a url with a non-default port", { type: "url", targets: [`https://${site}:8443/a`] }, "targets[0]"],
    ["a non-string target", { type: "url", targets: [42] }, "targets[0]"],
    ["a url on a subdomain", { type: "url", targets: [`https://sub.${site}/a`] }, "targets[0]"],
    ["a directory without a trailing slash", { type: "directory", targets: [`https://${site}/images`] }, "targets[0]"],
    ["a directory path without a trailing slash", { type: "directory", targets: ["/images/", "/css"] }, "targets[1]"],
    ["a protocol-relative directory", { type: "directory", targets: ["//evil.example.com/"] }, "targets[0]"],
    ["a directory with a query", { type: "directory", targets: [`https://${site}/images/?x=1`] }, "targets[0]"],
  ];
  it("is 422 validation_failed naming the field of each bad purge body", async () => {
    for (const [name, bad, field] of purgeCases()) {
      const error = await failure(purgeDomain(db, alice.caller, site, bad as PurgeInput, { stepMs: STEP }));
      expect(error.code, name).toBe("validation_failed");
      expect(error.details, name).toEqual({ field });
    }
  });

  it("is 404 for another account's or an unknown domain, and for another account's task", async () => {
    const good = { type: "url", targets: [`https://${site}/a`] };
    const foreign = await failure(purgeDomain(db, bob.caller, site, good, { stepMs: STEP }));
    expect(foreign.code).toBe("not_found");
    expect(foreign.message).toBe("Domain not found");
    const unknown = await failure(
      purgeDomain(db, alice.caller, "unknown.example.com", { type: "url", targets: ["https://unknown.example.com/a"] }, { stepMs: STEP }),
    );
    expect(unknown.code).toBe("not_found");
    expect((await failure(purgeDomain(db, alice.caller, "not a domain", good, { stepMs: STEP }))).code).toBe("not_found");
    const { task } = await purgeDomain(db, alice.caller, site, good, { stepMs: STEP });
    const other = await failure(getPurgeTask(db, bob.caller, task.id, STEP));
    expect(other.code).toBe("not_found");
    expect(other.message).toBe("Purge task not found");
    expect((await failure(getPurgeTask(db, alice.caller, "purge_missing", STEP))).message).toBe("Purge task not found");
    expect((await failure(listPurgeTasks(db, bob.caller, site, 10, STEP))).message).toBe("Domain not found");
  });

  it("is 409 conflict for a domain whose review was rejected, but allowed while review is pending", async () => {
    const rejected = (await createDomain(db, alice.caller, body({ domain: "reject.example.net" }), { stepMs: STEP, checkOriginHost })).domain.domain;
    const purge = { type: "url", targets: [`https://${rejected}/a`] };
    const pending = await purgeDomain(db, alice.caller, rejected, purge, { stepMs: STEP });
    expect(pending.task.status).toBe("pending");
    await ageDomain(rejected, 1);
    const error = await failure(purgeDomain(db, alice.caller, rejected, purge, { stepMs: STEP }));
    expect(error.code).toBe("conflict");
    expect(error.status).toBe(409);
  });

  it("moves a task from pending to running to done, with a completion time", async () => {
    const { task } = await purgeDomain(db, alice.caller, site, { type: "url", targets: [`https://${site}/p`] }, { stepMs: STEP });
    const statuses: string[] = [];
    for (const step of [0, 1, 2, 7]) {
      await agePurge(task.id, step);
      const read = await getPurgeTask(db, alice.caller, task.id, STEP);
      statuses.push(read.status);
      if (read.status === "done") expect(Date.parse(read.completedAt!)).toBe(Date.parse(read.createdAt) + 2 * STEP);
      else expect(read.completedAt).toBeNull();
    }
    expect(statuses).toEqual(["pending", "running", "done", "done"]);
  });

  it("lists a domain's tasks newest first, limited to first", async () => {
    const domainName = (await createDomain(db, alice.caller, body(), { stepMs: STEP, checkOriginHost })).domain.domain;
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { task } = await purgeDomain(db, alice.caller, domainName, { type: "url", targets: [`https://${domainName}/${i}`] }, { stepMs: STEP });
      await agePurge(task.id, 3 - i); // older first
      ids.push(task.id);
    }
    const all = await listPurgeTasks(db, alice.caller, domainName, 10, STEP);
    expect(all.map((t) => t.id)).toEqual([...ids].reverse());
    expect(all.map((t) => t.status)).toEqual(["running", "done", "done"]);
    expect((await listPurgeTasks(db, alice.caller, domainName, 2, STEP)).map((t) => t.id)).toEqual([ids[2], ids[1]]);
    const bad = await failure(listPurgeTasks(db, alice.caller, domainName, 0, STEP));
    expect(bad.details).toEqual({ field: "first" });
  });

  it("replays a purge for the same Idempotency-Key and body, and is 409 for another body", async () => {
    const request = { type: "url", targets: [`https://${site}/idem`] };
    const first = await purgeDomain(db, alice.caller, site, request, { idempotencyKey: "idem-purge-1", stepMs: STEP });
    const second = await purgeDomain(db, alice.caller, site, { ...request }, { idempotencyKey: "idem-purge-1", stepMs: STEP });
    expect(second.replayed).toBe(true);
    expect(second.task).toEqual(first.task);
    expect(await db("purge_tasks").where("id", first.task.id).count({ n: "*" })).toEqual([{ n: 1 }]);
    const count = await db("purge_tasks").where("domain", site).count({ n: "*" });
    await purgeDomain(db, alice.caller, site, request, { idempotencyKey: "idem-purge-1", stepMs: STEP });
    expect(await db("purge_tasks").where("domain", site).count({ n: "*" })).toEqual(count);
    const conflict = await failure(
      purgeDomain(db, alice.caller, site, { type: "url", targets: [`https://${site}/other`] }, { idempotencyKey: "idem-purge-1", stepMs: STEP }),
    );
    expect(conflict.code).toBe("conflict");
    const otherDomain = await failure(
      purgeDomain(db, alice.caller, httpSite, { type: "url", targets: [`https://${httpSite}/idem`] }, { idempotencyKey: "idem-purge-1", stepMs: STEP }),
    );
    expect(otherDomain.code).toBe("conflict");
  });
});
