/**
 * Operators, roles, console sessions and the audit log through the router (issue 23 §1;
 * docs/adr/0022-operators-and-audit.md; README "Operator roles"): the README's roles table is
 * read and every cell checked with an operator token of that role, on both subgraphs; a console
 * session needs its CSRF token for writes and ends on the server at sign-out; every admin write
 * has its audit row in its own transaction (a failing write leaves none); wrong passwords are
 * throttled per account and per address.
 */
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestStack, type TestStack } from "../support/stack.ts";
import { CLI_ACTOR, verifyAudit } from "../../src/audit/log.ts";
import { ADMIN_FIELD_ROLES, OPERATOR_ROLES, type OperatorRole } from "../../src/auth/operators/roles.ts";
import { createOperator, createOperatorToken } from "../../src/auth/operators/store.ts";
import { topUpKey } from "../../src/auth/keys.ts";
import { csrfMatches, csrfTokenOf, endSession, operatorOfSession, startSession } from "../../src/auth/operators/sessions.ts";
import { revokeOperatorToken, setOperatorStatus } from "../../src/auth/operators/store.ts";

const ADMIN_TOKEN = "operators-test-admin-token";
const PASSWORD = "a long enough password";

/** The README's roles table: field → roles with a ✓. */
function readRolesTable(): Map<string, OperatorRole[]> {
  const readme = fs.readFileSync(new URL("../../README.md", import.meta.url), "utf8");
  const start = readme.indexOf("\n### Operator roles\n");
  expect(start, "README has a ### Operator roles section").toBeGreaterThan(0);
  const section = readme.slice(start, readme.indexOf("\n## ", start));
  const table = new Map<string, OperatorRole[]>();
  for (const line of section.split("\n")) {
    const cells = line
      .split("|")
      .slice(1, -1)
      .map((c) => c.trim());
    if (cells.length !== 5 || !cells[0]!.startsWith("`")) continue;
    table.set(
      cells[0]!.replace(/`/g, ""),
      OPERATOR_ROLES.filter((_, i) => cells[i + 1]!.startsWith("✓")),
    );
  }
  return table;
}

let t: TestStack;
const tokens = {} as Record<OperatorRole, string>;
let keyId: string;

const gql = (query: string, variables: Record<string, unknown>, headers: Record<string, string>) => t.graphql(query, variables, undefined, headers);
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/**
 * One operation per admin field: a role allowed to use it gets past the role check (an answer,
 * or a 404/422 about the made-up object); one that is not gets 403 with the role message.
 */
const PROBES: Record<string, () => [string, Record<string, unknown>]> = {
  "Query.adminMe": () => ["{ adminMe { role } }", {}],
  "Query.adminOverview": () => ["{ adminOverview(minutes: 1) { at } }", {}],
  "Query.adminApiKeys": () => ["{ adminApiKeys(first: 1) { totalCount } }", {}],
  "Query.adminApiKey": () => ["query($id: ID!) { adminApiKey(id: $id) { id } }", { id: keyId }],
  "Query.adminCustomerWallets": () => ["{ adminCustomerWallets(first: 1) { totalCount } }", {}],
  "Query.adminOrders": () => ["{ adminOrders(first: 1) { totalCount } }", {}],
  "Query.adminAuditLog": () => ["{ adminAuditLog(first: 1) { totalCount } }", {}],
  "Query.adminWebhookDeliveries": () => ["{ adminWebhookDeliveries(first: 1) { totalCount } }", {}],
  "Query.adminChannels": () => ["{ adminChannels { id } }", {}],
  "Query.adminOperators": () => ["{ adminOperators { id } }", {}],
  "Mutation.adminTopUpAccount": () => ['mutation { adminTopUpAccount(input: { keyId: "key_missing", amount: "1" }) { keyId } }', {}],
  "Mutation.adminTopUpCustomer": () => [
    'mutation { adminTopUpCustomer(input: { accountId: "acc_missing", customerId: "c1", amount: "1" }) { ledgerEntry { id } } }',
    {},
  ],
  "Mutation.adminSetCustomerCreditLine": () => [
    'mutation { adminSetCustomerCreditLine(input: { accountId: "acc_missing", customerId: "c1", limit: "1" }) { customerBalance { customerId } } }',
    {},
  ],
  "Mutation.adminSetApiKeyStatus": () => ['mutation { adminSetApiKeyStatus(input: { keyId: "key_missing", status: DISABLED }) { apiKey { id } } }', {}],
  "Mutation.adminResendDelivery": () => ['mutation { adminResendDelivery(input: { deliveryId: "999999" }) { delivery { id } } }', {}],
  "Mutation.adminCreateApiKey": () => ['mutation { adminCreateApiKey(input: { name: "" }) { id } }', {}],
  "Mutation.adminUpdateApiKey": () => ['mutation { adminUpdateApiKey(input: { keyId: "key_missing", rateLimit: 5 }) { apiKey { id } } }', {}],
  "Mutation.adminUpsertVendor": () => ['mutation { adminUpsertVendor(input: { name: "" }) { vendor { id } } }', {}],
  "Mutation.adminUpsertProduct": () => [
    'mutation { adminUpsertProduct(input: { vendorId: "vnd_missing", category: "cdn", name: "x", billingCycles: [{ cycle: "monthly", price: "1" }] }) { product { id } } }',
    {},
  ],
  "Mutation.adminAddChannel": () => [
    'mutation { adminAddChannel(input: { name: "x", baseUrl: "ftp://nowhere", apiKey: "k", models: [52] }) { channel { id } } }',
    {},
  ],
  "Mutation.adminUpdateChannel": () => ['mutation { adminUpdateChannel(input: { id: "chn_missing", weight: 2 }) { channel { id } } }', {}],
  "Mutation.adminSetChannelStatus": () => ['mutation { adminSetChannelStatus(input: { id: "chn_missing", enabled: true }) { channel { id } } }', {}],
  "Mutation.adminTestChannel": () => ['mutation { adminTestChannel(input: { id: "chn_missing" }) { ok } }', {}],
  "Mutation.adminCreateOperator": () => ['mutation { adminCreateOperator(input: { email: "not an email", role: VIEWER }) { operator { id } } }', {}],
  "Mutation.adminSetOperatorStatus": () => ['mutation { adminSetOperatorStatus(input: { id: "op_missing", status: "DISABLED" }) { operator { id } } }', {}],
  "Mutation.adminSignOut": () => ["mutation { adminSignOut { ended } }", {}],
};

beforeAll(async () => {
  t = await startTestStack({ ADMIN_TOKEN, ADMIN_FAILURES_PER_MINUTE: "1000", CHANNEL_KEY_SECRET: "operators-channel-secret-0123456789abcdef" });
  const db = t.stack.db!;
  for (const role of OPERATOR_ROLES) {
    const operator = await createOperator(db, CLI_ACTOR, { email: `${role}@example.com`, role, password: PASSWORD });
    tokens[role] = (await createOperatorToken(db, CLI_ACTOR, operator.id, "test")).token;
  }
  const key = await t.createKey("10");
  keyId = key.id;
});
afterAll(async () => {
  await t?.close();
});

describe("the README roles table", () => {
  const table = readRolesTable();

  it("is the role table the subgraphs check, and every admin field of the supergraph is in it", () => {
    expect(Object.fromEntries(table)).toEqual(Object.fromEntries(Object.entries(ADMIN_FIELD_ROLES).map(([f, r]) => [f, [...r]])));
    const supergraph = fs.readFileSync(new URL("../../schema/supergraph.graphql", import.meta.url), "utf8");
    const adminFields = new Set<string>();
    for (const block of supergraph.matchAll(/type (Query|Mutation)\b[^{]*\{([\s\S]*?)\n\}/g)) {
      for (const field of block[2]!.matchAll(/^\s+(admin\w+)/gm)) adminFields.add(`${block[1]}.${field[1]}`);
    }
    adminFields.delete("Mutation.adminSignIn"); // run by the router's sign-in route only
    expect([...adminFields].sort()).toEqual(Object.keys(ADMIN_FIELD_ROLES).sort());
  });

  for (const [field, allowed] of readRolesTable()) {
    for (const role of OPERATOR_ROLES) {
      const may = allowed.includes(role);
      it(`${field}: ${may ? "used" : "refused (403)"} by ${role}`, async () => {
        const [query, variables] = PROBES[field]!();
        const { body } = await gql(query, variables, bearer(tokens[role]));
        const error = body.errors?.[0];
        if (may) expect(error?.message ?? "", JSON.stringify(body)).not.toBe("Your operator role may not use this field");
        else expect(error, JSON.stringify(body)).toMatchObject({ message: "Your operator role may not use this field", extensions: { code: "forbidden" } });
      });
    }
  }

  it("lets support disable a key but not enable one", async () => {
    const key = await t.createKey("1");
    const set = (status: string) =>
      gql(
        `mutation($id: ID!) { adminSetApiKeyStatus(input: { keyId: $id, status: ${status} }) { apiKey { status } } }`,
        { id: key.id },
        bearer(tokens.support),
      );
    expect((await set("DISABLED")).body.data.adminSetApiKeyStatus.apiKey.status).toBe("DISABLED");
    expect((await set("ACTIVE")).body.errors[0]).toMatchObject({ extensions: { code: "forbidden" } });
  });
});

describe("console sessions", () => {
  const signIn = (email: string, password: string) =>
    fetch(`${t.url}/admin/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email, password }) });
  const cookieOf = (response: Response) => response.headers.get("set-cookie")!.split(";")[0]!;

  it("signs in with a password: an HttpOnly SameSite=Strict cookie, a CSRF token required on every write, and a sign-out that ends the session on the server", async () => {
    const response = await signIn("finance@example.com", PASSWORD);
    expect(response.status).toBe(200);
    const setCookie = response.headers.get("set-cookie")!;
    expect(setCookie).toMatch(/^sy_admin_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/); // no Secure on plain http to 127.0.0.1
    const body = await response.json();
    expect(body).toMatchObject({ operator: { email: "finance@example.com", role: "FINANCE" }, role: "FINANCE", via: "SESSION" });
    expect(body.allowedFields).toContain("Mutation.adminTopUpAccount");
    expect(JSON.stringify(body)).not.toContain(setCookie.split(";")[0]!.split("=")[1]);
    const cookie = { cookie: cookieOf(response) };
    const topUp = `mutation($id: ID!) { adminTopUpAccount(input: { keyId: $id, amount: "1.5" }) { balance { amount } } }`;
    const withoutCsrf = await gql(topUp, { id: keyId }, cookie);
    expect(withoutCsrf.body.errors[0]).toMatchObject({ message: "Missing or wrong CSRF token", extensions: { code: "forbidden" } });
    const withCsrf = await gql(topUp, { id: keyId }, { ...cookie, "x-csrf-token": body.csrfToken });
    expect(withCsrf.body.errors).toBeUndefined();
    // Reads need no CSRF token; a reload learns it again from GET /admin/session.
    expect((await gql("{ adminMe { actor } }", {}, cookie)).body.data.adminMe.actor).toBe("finance@example.com");
    const current = await (await fetch(`${t.url}/admin/session`, { headers: cookie })).json();
    expect(current.csrfToken).toBe(body.csrfToken);
    // Sign-out needs the CSRF token too, then the same cookie is refused.
    expect((await fetch(`${t.url}/admin/session`, { method: "DELETE", headers: cookie })).status).toBe(403);
    const out = await fetch(`${t.url}/admin/session`, { method: "DELETE", headers: { ...cookie, "x-csrf-token": body.csrfToken } });
    expect(await out.json()).toEqual({ ended: true });
    expect(out.headers.get("set-cookie")).toContain("Max-Age=0");
    expect((await gql("{ adminMe { actor } }", {}, cookie)).body.errors[0]).toMatchObject({
      message: "Session ended: sign in again",
      extensions: { code: "unauthorized" },
    });
  });

  it("answers 401 with one message for an unknown email and a wrong password, and refuses adminSignIn sent as GraphQL", async () => {
    for (const [email, password] of [
      ["nobody@example.com", PASSWORD],
      ["viewer@example.com", "the wrong password"],
    ]) {
      const response = await signIn(email!, password!);
      expect(response.status).toBe(401);
      expect((await response.json()).message).toBe("Wrong email or password");
    }
    const direct = await gql(`mutation { adminSignIn(input: { email: "viewer@example.com", password: "${PASSWORD}" }) { expiresAt } }`, {}, {});
    expect(direct.body.errors[0]).toMatchObject({ extensions: { code: "forbidden" } });
  });

  it("ignores a session cookie a client sends as an internal header", async () => {
    const forged = await gql("{ adminMe { actor } }", {}, { "x-switchyard-session": "A".repeat(43) });
    expect(forged.body.errors[0].extensions.code).toBe("unauthorized");
    expect(forged.body.data?.adminMe ?? null).toBeNull();
  });
});

describe("session expiry", () => {
  const settings = { idleSeconds: 30 * 60, absoluteSeconds: 12 * 3600 };
  const id = (n: number) => `${"s".repeat(42)}${n}`;

  it("ends a session idle longer than the idle expiry, one older than the absolute expiry however busy, and one signed out", async () => {
    const db = t.stack.db!;
    const operator = (await db("operators").where("email", "viewer@example.com").first("id")).id as string;
    const t0 = Date.parse("2026-01-01T00:00:00Z");
    await startSession(db, operator, id(1), settings, t0);
    expect(await operatorOfSession(db, id(1), settings, t0 + 29 * 60_000)).toMatchObject({ email: "viewer@example.com" });
    expect(await operatorOfSession(db, id(1), settings, t0 + 29 * 60_000 + 31 * 60_000)).toBeNull(); // 31 min after the last request
    await startSession(db, operator, id(2), settings, t0);
    for (let minutes = 20; minutes < 12 * 60; minutes += 20) expect(await operatorOfSession(db, id(2), settings, t0 + minutes * 60_000)).not.toBeNull();
    expect(await operatorOfSession(db, id(2), settings, t0 + 12 * 3600_000)).toBeNull();
    const now = Date.now();
    await startSession(db, operator, id(3), settings, now);
    expect(await endSession(db, id(3), now)).toBe(true);
    expect(await operatorOfSession(db, id(3), settings, now)).toBeNull();
    expect(csrfMatches(id(3), csrfTokenOf(id(3)))).toBe(true);
    expect(csrfMatches(id(3), csrfTokenOf(id(4)))).toBe(false);
  });

  it("refuses a revoked operator token, and the tokens of a disabled operator", async () => {
    const db = t.stack.db!;
    const made = await createOperator(db, CLI_ACTOR, { email: "bot@example.com", role: "viewer" });
    const kept = await createOperatorToken(db, CLI_ACTOR, made.id, "kept");
    const leaked = await createOperatorToken(db, CLI_ACTOR, made.id, "leaked");
    const me = (token: string) => gql("{ adminMe { actor via } }", {}, bearer(token));
    expect((await me(leaked.token)).body.data.adminMe).toEqual({ actor: "bot@example.com", via: "TOKEN" });
    await revokeOperatorToken(db, CLI_ACTOR, leaked.id);
    expect((await me(leaked.token)).body.errors[0].extensions.code).toBe("unauthorized");
    expect((await me(kept.token)).body.data.adminMe.actor).toBe("bot@example.com");
    await setOperatorStatus(db, CLI_ACTOR, made.id, "disabled");
    expect((await me(kept.token)).body.errors[0].extensions.code).toBe("unauthorized");
  });

  it("ends every session of an operator that is disabled", async () => {
    const db = t.stack.db!;
    const made = await createOperator(db, CLI_ACTOR, { email: "leaving@example.com", role: "viewer", password: PASSWORD });
    await startSession(db, made.id, id(5), settings);
    expect(await operatorOfSession(db, id(5), settings)).not.toBeNull();
    await setOperatorStatus(db, CLI_ACTOR, made.id, "disabled");
    expect(await operatorOfSession(db, id(5), settings)).toBeNull();
    await setOperatorStatus(db, CLI_ACTOR, made.id, "active");
    expect(await operatorOfSession(db, id(5), settings)).toBeNull(); // ended, not suspended
  });
});

describe("the audit log", () => {
  const AUDIT = `query($type: String, $id: String) { adminAuditLog(objectType: $type, objectId: $id, first: 10) { totalCount nodes { actor role action objectType objectId requestId before after ledgerEntryId } } }`;

  it("records a top-up with its operator, request id, before and after, and ledger entry", async () => {
    const done = await fetch(`${t.url}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-request-id": "audit-top-up-1", ...bearer(tokens.finance) },
      body: JSON.stringify({
        query: `mutation($id: ID!) { adminTopUpAccount(input: { keyId: $id, amount: "2.5" }) { ledgerEntry { id } } }`,
        variables: { id: keyId },
      }),
    }).then((r) => r.json());
    const entryId = done.data.adminTopUpAccount.ledgerEntry.id;
    const { body } = await gql(AUDIT, { type: "api_key", id: keyId }, bearer(tokens.viewer));
    const row = body.data.adminAuditLog.nodes.find((n: { requestId: string }) => n.requestId === "audit-top-up-1");
    expect(row).toMatchObject({
      actor: "finance@example.com",
      role: "FINANCE",
      action: "adminTopUpAccount",
      objectType: "api_key",
      objectId: keyId,
      ledgerEntryId: entryId,
    });
    expect(JSON.parse(row.after).ledgerEntry.amount).toBe(2500);
    expect(JSON.parse(row.after).listing.balance - JSON.parse(row.before).balance).toBe(2500);
  });

  it("writes no row for a write that fails, and none for a role refused", async () => {
    const before = (await gql("{ adminAuditLog { totalCount } }", {}, bearer(tokens.owner))).body.data.adminAuditLog.totalCount;
    const failed = await gql('mutation { adminTopUpAccount(input: { keyId: "key_missing", amount: "1" }) { keyId } }', {}, bearer(tokens.owner));
    expect(failed.body.errors[0].extensions.code).toBe("not_found");
    const refused = await gql(`mutation($id: ID!) { adminTopUpAccount(input: { keyId: $id, amount: "1" }) { keyId } }`, { id: keyId }, bearer(tokens.support));
    expect(refused.body.errors[0].extensions.code).toBe("forbidden");
    const tooMuch = await gql(
      `mutation($id: ID!) { adminTopUpAccount(input: { keyId: $id, amount: "99999999999" }) { keyId } }`,
      { id: keyId },
      bearer(tokens.owner),
    );
    expect(tooMuch.body.errors[0].extensions.code).toBe("validation_failed");
    expect((await gql("{ adminAuditLog { totalCount } }", {}, bearer(tokens.owner))).body.data.adminAuditLog.totalCount).toBe(before);
  });

  it("records break-glass writes, never a secret, and channel changes without their key", async () => {
    const created = await gql('mutation { adminCreateApiKey(input: { name: "audited", balance: "3" }) { id key webhookSecret } }', {}, bearer(ADMIN_TOKEN));
    const made = created.body.data.adminCreateApiKey;
    const channel = await gql(
      'mutation { adminAddChannel(input: { name: "audited", baseUrl: "https://93.184.216.34", apiKey: "sk-very-secret-channel-key", models: [52], priority: -100 }) { channel { id } } }',
      {},
      bearer(tokens.owner),
    );
    expect(channel.body.errors).toBeUndefined();
    const rows = (await gql("{ adminAuditLog(first: 5) { nodes { actor action objectId before after ledgerEntryId } } }", {}, bearer(tokens.owner))).body.data
      .adminAuditLog.nodes;
    const keyRow = rows.find((r: { objectId: string }) => r.objectId === made.id);
    expect(keyRow).toMatchObject({ actor: "break-glass", action: "adminCreateApiKey" });
    expect(keyRow.ledgerEntryId).not.toBeNull();
    const all = JSON.stringify(rows);
    expect(all).not.toContain(made.key);
    expect(all).not.toContain(made.webhookSecret);
    expect(all).not.toContain("sk-very-secret-channel-key");
    expect(rows.find((r: { action: string }) => r.action === "adminAddChannel")).toBeDefined();
  });

  it("filters by operator and time", async () => {
    const me = (await gql("{ adminOperators { id email } }", {}, bearer(tokens.owner))).body.data.adminOperators.find(
      (o: { email: string }) => o.email === "finance@example.com",
    );
    const mine = (await gql(`query($op: ID) { adminAuditLog(operatorId: $op) { nodes { actor } } }`, { op: me.id }, bearer(tokens.owner))).body.data
      .adminAuditLog.nodes;
    expect(mine.length).toBeGreaterThan(0);
    expect(new Set(mine.map((n: { actor: string }) => n.actor))).toEqual(new Set(["finance@example.com"]));
    const future = (await gql(`{ adminAuditLog(since: "2999-01-01T00:00:00Z") { totalCount } }`, {}, bearer(tokens.owner))).body.data.adminAuditLog.totalCount;
    expect(future).toBe(0);
  });

  it("makes verify report an operator money write without its audit row", async () => {
    const db = t.stack.db!;
    // (The test's own keys were given their opening balances directly: those are reported already.)
    const known = await verifyAudit(db);
    const entry = await topUpKey(db, keyId, 1000); // not through an operator surface
    expect(await verifyAudit(db)).toEqual([...known, expect.objectContaining({ kind: "operator_money_write_unaudited", subject: `ledger_entry ${entry.id}` })]);
    await db("audit_log").insert({
      at: new Date().toISOString(),
      actor: "cli",
      action: "repair",
      object_type: "api_key",
      object_id: keyId,
      ledger_entry_id: entry.id,
    });
    expect(await verifyAudit(db)).toEqual(known);
    expect(known.every((p) => !p.subject.endsWith(` ${entry.id}`))).toBe(true);
  });
});

describe("wrong passwords", () => {
  let small: TestStack;
  beforeAll(async () => {
    small = await startTestStack({ ADMIN_FAILURES_PER_MINUTE: "3" });
    await createOperator(small.stack.db!, CLI_ACTOR, { email: "a@example.com", role: "viewer", password: PASSWORD });
  });
  afterAll(async () => {
    await small?.close();
  });
  const signIn = (email: string, password: string) =>
    fetch(`${small.url}/admin/session`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email, password }) });

  it("are throttled per account and address: after 3 failures even the right password is 429 with Retry-After", async () => {
    for (let i = 0; i < 3; i++) expect((await signIn("a@example.com", `wrong password ${i}`)).status).toBe(401);
    const refused = await signIn("a@example.com", PASSWORD);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    // The address is spent too: another account from it is refused.
    expect((await signIn("b@example.com", PASSWORD)).status).toBe(429);
  });

  it("throttles wrong operator tokens from an address", async () => {
    const guesses = await Promise.all(
      Array.from({ length: 6 }, (_, i) => small.graphql("{ adminMe { role } }", {}, undefined, { authorization: `Bearer syop_opt_x${i}_${"A".repeat(43)}` })),
    );
    expect(guesses.map((g) => g.body.errors[0].extensions.code)).toContain("rate_limited");
  });
});
