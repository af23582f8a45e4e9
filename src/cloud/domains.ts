/**
 * CDN accelerated domains (docs/api/cloud.md §4 `POST /domains`, `GET /domains/{domain}/status`;
 * docs/architecture.md §8 domain body and domain status fields).
 *
 * The vendor side is simulated statelessly, like the generation simulator: every status is
 * derived from the time elapsed since the domain was created, in steps of `stepMs`, so the
 * statuses need no worker, survive restarts and agree across instances.
 *
 * | step (elapsed / stepMs) | review   | resolution | certificate (https) | acceleration |
 * |-------------------------|----------|------------|---------------------|--------------|
 * | 0                       | pending  | pending    | none                | pending      |
 * | 1                       | approved | pending    | issuing             | pending      |
 * | 2                       | approved | resolved   | issuing             | deploying    |
 * | 3 and later             | approved | resolved   | issued              | online       |
 *
 * An `http` domain's certificate is always `none`. Sandbox hook (as payment sandboxes have): a
 * domain whose first label is `reject` (for example `reject.example.com`) is rejected at step 1:
 * review `rejected`, resolution stays `pending`, certificate `none`, acceleration `offline`,
 * error `review_rejected`.
 *
 * Decisions where the spec is silent:
 * - A domain is a lower-cased FQDN (validation.ts `normalizeHostname`, the rule of every host name
 *   in the cloud API): at least two labels, LDH labels of 1-63 characters that
 *   neither start nor end with a hyphen, an alphabetic (or `xn--`) top-level label, so IP
 *   literals never pass. Upper case is folded; one trailing root dot is dropped. Unicode must be
 *   sent as its A-label (`xn--…`). Wildcards (`*.example.com`) are rejected.
 * - The CNAME is `<domain>.cdn.switchyard.example`; because a DNS name is at most 253
 *   characters, a domain may be at most 253 − 23 = 230 characters, and a name inside the CNAME
 *   zone itself is rejected (it would point at itself).
 * - Origin `ip`: a dotted-quad IPv4 (no legacy forms, no leading zeros) or an IPv6 address
 *   without brackets or zone id, that is publicly routable (the URL guard's classification);
 *   stored in ipaddr.js's canonical form. Origin `domain`: the same hostname rules as the
 *   domain, lower-cased, and not the accelerated domain itself nor inside the CNAME zone; then
 *   resolved by the URL guard (DNS_SERVERS), which must find A or AAAA answers that are all
 *   public: a name resolving to a private or local address, or not resolving (or DNS failing),
 *   is refused like a private IP literal (422, field `origin.address`). Checked when the domain
 *   is created (every request, idempotent replays included, before the replay is looked up),
 *   not again later: we never connect to the origin ourselves, and the vendor's edge resolves
 *   it afresh whenever it fetches, so a later check here would vouch for nothing.
 *   `port` is an optional JSON integer 1-65535; absent or null is stored as null (the
 *   protocol's default port).
 * - `protocol` and `origin.type` are matched exactly (lower case). Unknown input fields are
 *   ignored. An input that is not a JSON object is 400 `invalid_request`.
 * - Check order (docs/architecture.md §4): input shape 400 → fields 422 → origin host's DNS answers 422 (field
 *   `origin.address`) → order exists in the caller's account
 *   404 → order's customer matches 422 (field `customer_id`) → product category `cdn` 409 →
 *   order `active` 409 → domain not taken by any account 409.
 * - The order's `metadata.domain` is not required to equal the domain: one CDN order may
 *   accelerate several domains.
 * - An idempotent replay returns the snapshot stored by the first request (its statuses as they
 *   were then), as Stripe replays the first response; read the status for fresh values.
 */
import ipaddr from "ipaddr.js";
import type { Knex } from "knex";
import { AppError } from "../errors.ts";
import { isUniqueViolation, nowIso, type Db } from "../db/index.ts";
import type { Caller } from "../auth/keys.ts";
import { isPublicAddress } from "../net/url-guard.ts";
import { withIdempotency } from "./idempotency.ts";
import { toSpecShape } from "../names.ts";
import { invalidInput, isPlainObject, normalizeHostname, requireJsonObject } from "./validation.ts";
import type { AccelerationStatus, CertificateStatus, DomainErrorStatus, ResolutionStatus, ReviewStatus } from "./states.ts";

/** The zone under which every domain's CNAME target lives. */
export const CNAME_ZONE = "cdn.switchyard.example";
/** The longest domain accepted, so `<domain>.<CNAME_ZONE>` stays within 253 characters. */
export const MAX_DOMAIN_LENGTH = 253 - CNAME_ZONE.length - 1;

/** Origin configuration of a domain; `port` null means the protocol's default port. */
export interface DomainOrigin {
  type: "ip" | "domain";
  address: string;
  port: number | null;
}

/**
 * A domain with its statuses as of the moment it was read (docs/architecture.md §8 domain status fields, in
 * camelCase). Times are ISO 8601 UTC.
 */
export interface DomainRecord {
  domain: string;
  accountId: string;
  orderId: string;
  customerId: string;
  origin: DomainOrigin;
  protocol: "http" | "https";
  cname: string;
  reviewStatus: ReviewStatus;
  resolutionStatus: ResolutionStatus;
  certificateStatus: CertificateStatus;
  accelerationStatus: AccelerationStatus;
  errorStatus: DomainErrorStatus;
  createdAt: string;
  /** When the last status change happened (derived), or the row's own update time if later. */
  updatedAt: string;
}

/**
 * Checks a CDN origin host name (the URL guard's `checkHost`, src/net/url-guard.ts): resolves
 * `{ ok: true }` only when the name resolves, to public addresses only. Never rejects.
 */
export type OriginHostCheck = (host: string) => Promise<{ ok: boolean }>;

/**
 * A domain to create as the client sends it (docs/architecture.md §8 domain body in camelCase;
 * GraphQL `CreateDomainInput` without `idempotencyKey`). The types are the contract, not a
 * promise: every value is checked again at run time.
 */
export interface CreateDomainInput {
  domain?: string | null;
  origin?: { type?: string | null; address?: string | null; port?: number | null } | null;
  /** `http` or `https`. */
  protocol?: string | null;
  /** An active CDN order of the caller's account. */
  orderId?: string | null;
  /** The order's customer. */
  customerId?: string | null;
}

/** Options of {@link createDomain}. */
export interface CreateDomainOptions {
  /** The origin host check: every `domain` origin goes through it before anything is stored. */
  checkOriginHost: OriginHostCheck;
  /** The Idempotency-Key header, if any. */
  idempotencyKey?: string | null;
  /** The request id (kept for symmetry with other creates; domains emit no event). */
  requestId?: string | null;
  /** Milliseconds per simulated status step. */
  stepMs: number;
}

/** True when `name` is the CNAME zone or inside it. */
function inCnameZone(name: string): boolean {
  return name === CNAME_ZONE || name.endsWith(`.${CNAME_ZONE}`);
}

/**
 * The CNAME target of a domain (docs/architecture.md §8 domain status field `cname`).
 * @param domain a normalized domain name
 * @returns `<domain>.cdn.switchyard.example`
 * @throws nothing
 */
export function cnameFor(domain: string): string {
  return `${domain}.${CNAME_ZONE}`;
}

/** A publicly routable IP literal in canonical form, or null. */
function normalizeOriginIp(value: string): string | null {
  if (ipaddr.IPv4.isValidFourPartDecimal(value)) {
    return isPublicAddress(value) ? ipaddr.IPv4.parse(value).toString() : null;
  }
  if (value.includes("%") || value.includes("[") || !ipaddr.IPv6.isValid(value)) return null;
  return isPublicAddress(value) ? ipaddr.IPv6.parse(value).toString() : null;
}

/** The 422 of an origin address that is not public (or not an address at all), by origin type. */
function invalidOriginAddress(type: "ip" | "domain"): AppError {
  return invalidInput(
    "origin.address",
    type === "ip" ? "must be a public IPv4 or IPv6 address" : "must be a hostname other than the domain itself that resolves only to public addresses",
  );
}

export interface ValidDomainBody {
  domain: string;
  origin: DomainOrigin;
  protocol: "http" | "https";
  orderId: string;
  customerId: string;
}

/**
 * Validates a create-domain input (docs/architecture.md §8): the first check of
 * {@link createDomain}, needing no database (the REST shim asks it for the answer to a body that
 * lacks a required field, which GraphQL cannot carry: router/rest/cloud.ts).
 * @throws AppError `invalid_request` (400) when the input is not an object; `validation_failed`
 *   (422) with `details.field` naming the first bad field as the spec does
 */
export function validateDomainInput(input: CreateDomainInput): ValidDomainBody {
  const body = requireJsonObject(input);
  const domain = normalizeHostname(body.domain, MAX_DOMAIN_LENGTH);
  if (!domain || inCnameZone(domain)) {
    throw invalidInput("domain", `must be a fully qualified domain name of at most ${MAX_DOMAIN_LENGTH} characters, without wildcards`);
  }
  const origin = body.origin;
  if (!isPlainObject(origin)) throw invalidInput("origin", "must be an object with type, address and optional port");
  if (origin.type !== "ip" && origin.type !== "domain") throw invalidInput("origin.type", 'must be "ip" or "domain"');
  let address: string | null = null;
  if (typeof origin.address === "string") {
    if (origin.type === "ip") {
      address = normalizeOriginIp(origin.address);
    } else {
      address = normalizeHostname(origin.address);
      if (address && (address === domain || inCnameZone(address))) address = null;
    }
  }
  if (!address) throw invalidOriginAddress(origin.type);
  let port: number | null = null;
  if (origin.port !== undefined && origin.port !== null) {
    if (typeof origin.port !== "number" || !Number.isInteger(origin.port) || origin.port < 1 || origin.port > 65535) {
      throw invalidInput("origin.port", "must be an integer from 1 to 65535");
    }
    port = origin.port;
  }
  if (body.protocol !== "http" && body.protocol !== "https") throw invalidInput("protocol", 'must be "http" or "https"');
  if (typeof body.orderId !== "string" || body.orderId.length === 0 || body.orderId.length > 40) {
    throw invalidInput("orderId", "must be a non-empty string");
  }
  if (typeof body.customerId !== "string" || body.customerId.length === 0 || body.customerId.length > 64) {
    throw invalidInput("customerId", "must be a non-empty string of at most 64 characters");
  }
  return {
    domain,
    origin: { type: origin.type, address, port },
    protocol: body.protocol,
    orderId: body.orderId,
    customerId: body.customerId,
  };
}

/** The statuses of a domain at `now`, derived from its creation time (see the module table). */
function deriveStatuses(domain: string, protocol: string, createdAt: string, stepMs: number, now: number) {
  const step = Math.max(1, stepMs);
  const created = Date.parse(createdAt);
  const reached = Math.max(0, Math.floor((now - created) / step));
  const rejected = domain.split(".")[0] === "reject";
  const https = protocol === "https";
  if (rejected) {
    return {
      reviewStatus: (reached >= 1 ? "rejected" : "pending") as ReviewStatus,
      resolutionStatus: "pending" as ResolutionStatus,
      certificateStatus: "none" as CertificateStatus,
      accelerationStatus: (reached >= 1 ? "offline" : "pending") as AccelerationStatus,
      errorStatus: (reached >= 1 ? "review_rejected" : "none") as DomainErrorStatus,
      lastChangeAt: created + Math.min(reached, 1) * step,
    };
  }
  return {
    reviewStatus: (reached >= 1 ? "approved" : "pending") as ReviewStatus,
    resolutionStatus: (reached >= 2 ? "resolved" : "pending") as ResolutionStatus,
    certificateStatus: (!https ? "none" : reached >= 3 ? "issued" : reached >= 1 ? "issuing" : "none") as CertificateStatus,
    accelerationStatus: (reached >= 3 ? "online" : reached >= 2 ? "deploying" : "pending") as AccelerationStatus,
    errorStatus: "none" as DomainErrorStatus,
    lastChangeAt: created + Math.min(reached, 3) * step,
  };
}

/** A `domains` row (`origin` as JSON text). */
interface DomainRow {
  domain: string;
  account_id: string;
  order_id: string;
  customer_id: string;
  origin: string;
  protocol: "http" | "https";
  cname: string;
  created_at: string;
  updated_at: string;
}

/** Converts a `domains` row to a record with statuses as of `now`. */
function toRecord(row: DomainRow, stepMs: number, now = Date.now()): DomainRecord {
  const origin = JSON.parse(row.origin) as DomainOrigin;
  const { lastChangeAt, ...statuses } = deriveStatuses(row.domain, row.protocol, row.created_at, stepMs, now);
  const derivedUpdate = new Date(lastChangeAt).toISOString();
  return {
    domain: row.domain,
    accountId: row.account_id,
    orderId: row.order_id,
    customerId: row.customer_id,
    origin: { type: origin.type, address: origin.address, port: origin.port ?? null },
    protocol: row.protocol,
    cname: row.cname,
    ...statuses,
    createdAt: row.created_at,
    // biome-ignore lint/complexity/useMathMinMax: ISO-8601 strings, compared as text, not numbers
    updatedAt: derivedUpdate > row.updated_at ? derivedUpdate : row.updated_at,
  };
}

/**
 * Creates an accelerated domain for an active CDN order of the caller's account
 * (docs/api/cloud.md §4 `POST /domains`; docs/architecture.md §8 domain body; issue 3 item 5).
 * @param input `{domain, origin: {type: "ip"|"domain", address, port?}, protocol: "http"|"https",
 *   orderId, customerId}` ({@link CreateDomainInput}); checked at run time, whatever its type says
 * @param opts `idempotencyKey` (Idempotency-Key, Stripe semantics), `stepMs` (simulator step),
 *   `checkOriginHost` (the URL guard's host check, run on a `domain` origin)
 * @returns the domain with its statuses, and whether this is a replay of an earlier request
 * @throws AppError `invalid_request` (400) when the input is not an object or the key is too long;
 *   `validation_failed` (422) with `details.field` as the spec names it (`domain`, `origin`, `origin.type`,
 *   `origin.address` — also for a hostname that does not resolve or resolves to a private or
 *   local address —, `origin.port`, `protocol`, `order_id`, `customer_id` — the latter also when
 *   the order belongs to another customer); `not_found` (404) "Order not found" for an order
 *   outside the caller's account; `conflict` (409) for an order that is not `active` or not of a
 *   `cdn` product, for a domain that already exists in any account, and for idempotency
 *   conflicts
 */
export async function createDomain(
  db: Db,
  caller: Pick<Caller, "keyId" | "accountId">,
  input: CreateDomainInput,
  opts: CreateDomainOptions,
): Promise<{ domain: DomainRecord; replayed: boolean }> {
  const valid = validateDomainInput(input);
  // DNS before the transaction: a lookup (up to two tries of 2 s) never holds a write lock.
  if (valid.origin.type === "domain") {
    const verdict = await opts.checkOriginHost(valid.origin.address).catch(() => ({ ok: false }));
    if (verdict.ok !== true) throw invalidOriginAddress("domain");
  }
  const { result, replayed } = await withIdempotency(
    db,
    { accountId: caller.accountId, key: opts.idempotencyKey, operation: "domains.create", request: toSpecShape(input) },
    async (trx: Knex.Transaction) => {
      const order = await trx("orders").where({ id: valid.orderId, account_id: caller.accountId }).first();
      if (!order) throw new AppError("not_found", "Order not found", { field: "order_id" });
      if (order.customer_id !== valid.customerId) {
        throw invalidInput("customerId", "must be the customer of the order");
      }
      const product = await trx("products").where("id", order.product_id).first("category");
      if (product?.category !== "cdn") {
        throw new AppError("conflict", "Order is not for a CDN product", { field: "order_id" });
      }
      if (order.status !== "active") throw new AppError("conflict", "Order is not active", { field: "order_id" });
      const taken = await trx("domains").where("domain", valid.domain).first("domain");
      if (taken) throw new AppError("conflict", "Domain already exists", { field: "domain" });
      const now = nowIso();
      const row = {
        domain: valid.domain,
        account_id: caller.accountId,
        order_id: valid.orderId,
        customer_id: valid.customerId,
        origin: JSON.stringify(valid.origin),
        protocol: valid.protocol,
        cname: cnameFor(valid.domain),
        created_at: now,
        updated_at: now,
      };
      try {
        await trx("domains").insert(row);
      } catch (error) {
        // Two accounts racing for one name: the loser's insert hits the primary key.
        if (isUniqueViolation(error)) throw new AppError("conflict", "Domain already exists", { field: "domain" });
        throw error;
      }
      return toRecord(row, opts.stepMs, Date.parse(now));
    },
  );
  return { domain: result, replayed };
}

/** The lookup form of a domain in a path: normalized, or null when it cannot name a domain. */
function lookupName(domain: string): string | null {
  return normalizeHostname(domain);
}

/**
 * Reads a domain of the caller's account with its current statuses
 * (docs/api/cloud.md §4 `GET /domains/{domain}/status`; docs/architecture.md §8 domain status fields).
 * @param domain the domain name (case-insensitive; a trailing dot is ignored)
 * @param stepMs milliseconds per simulated status step
 * @returns the domain record
 * @throws AppError `not_found` (404) "Domain not found" when it does not exist or belongs to
 *   another account
 */
export async function getDomain(db: Db | Knex.Transaction, caller: Pick<Caller, "accountId">, domain: string, stepMs: number): Promise<DomainRecord> {
  const name = lookupName(domain);
  const row = name ? await db("domains").where({ domain: name, account_id: caller.accountId }).first() : undefined;
  if (!row) throw new AppError("not_found", "Domain not found");
  return toRecord(row, stepMs);
}

/**
 * Batch read for GraphQL loaders (docs/api/cloud.md §4 domain status).
 * @param names domain names (case-insensitive)
 * @param stepMs milliseconds per simulated status step
 * @returns one entry per name, in the same order: the record, or null when the name is unknown
 *   or belongs to another account
 * @throws nothing of its own (database errors only)
 */
export async function getDomainsByNames(
  db: Db | Knex.Transaction,
  caller: Pick<Caller, "accountId">,
  names: readonly string[],
  stepMs: number,
): Promise<(DomainRecord | null)[]> {
  const normalized = names.map(lookupName);
  const wanted = [...new Set(normalized.filter((n): n is string => n !== null))];
  if (wanted.length === 0) return names.map(() => null);
  const rows = await db("domains").whereIn("domain", wanted).andWhere("account_id", caller.accountId);
  const now = Date.now();
  const byName = new Map(rows.map((row: DomainRow) => [row.domain, toRecord(row, stepMs, now)]));
  return normalized.map((n) => (n ? (byName.get(n) ?? null) : null));
}
