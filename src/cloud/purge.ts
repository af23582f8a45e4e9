/**
 * Cache purge tasks (docs/api/cloud.md §4 `POST /domains/{domain}/purge`; docs/architecture.md §8 purge body
 * `{"type": "url"|"directory", "targets": [...]}` answering `data.task_id`).
 *
 * Like the domain statuses, a task's status is derived from the time since it was created, in
 * steps of `stepMs`: `pending`, `running` after one step, `done` after two (`completedAt` is
 * then creation + 2 steps). Nothing needs to advance it, and it survives restarts.
 *
 * Decisions where the spec is silent:
 * - `targets` holds 1-100 strings of at most 2048 characters each.
 * - `url`: an absolute `http:` or `https:` URL whose host is the domain (case-insensitive),
 *   without credentials, fragment or a non-default port. A query string is allowed (it is part of
 *   the cache key).
 * - `directory`: an absolute URL as above whose path ends in `/` and which has no query, or a
 *   path that starts with `/` (not `//`) and ends in `/`; a path is made absolute with the
 *   domain's protocol (`https://example.com/images/`).
 * - Targets are stored in WHATWG-normalized form (`new URL(...).href`); duplicates after
 *   normalization are dropped, keeping the first.
 * - Check order (docs/architecture.md §4): input shape 400 → fields 422 → domain of the caller 404 → review
 *   not rejected 409. A domain whose review is still pending may be purged (nothing is cached
 *   yet; the task completes as usual).
 * - Purge tasks emit no callback (docs/api/cloud.md §6 lists none); their state is read by id.
 * - An idempotent replay returns the snapshot stored by the first request.
 */
import type { Knex } from "knex";
import { AppError } from "../errors.ts";
import { nowIso, type Db } from "../db/index.ts";
import type { Caller } from "../auth/keys.ts";
import { newId } from "../ids.ts";
import { withIdempotency } from "./idempotency.ts";
import { toSpecShape } from "../names.ts";
import { byCreation, firstRowsByParent } from "../pagination.ts";
import { getDomain } from "./domains.ts";
import { invalid, invalidInput, normalizeHostname, requireJsonObject } from "./validation.ts";
import type { PurgeStatus } from "./states.ts";

/** A purge task as read now. Times are ISO 8601 UTC. */
export interface PurgeTaskRecord {
  /** `purge_…` */
  id: string;
  domain: string;
  type: "url" | "directory";
  /** Normalized absolute URLs. */
  targets: string[];
  status: PurgeStatus;
  createdAt: string;
  /** Creation + 2 steps once `done`, else null. */
  completedAt: string | null;
}

/**
 * A purge as the client sends it (docs/architecture.md §8 purge body; GraphQL `PurgeDomainInput`
 * without `domain` and `idempotencyKey`). Checked again at run time, whatever its type says.
 */
export interface PurgeInput {
  /** `url` or `directory`. */
  type?: string | null;
  /** 1-{@link MAX_PURGE_TARGETS} URLs, or directory paths. */
  targets?: readonly string[] | null;
}

/** Options of {@link purgeDomain}. */
export interface PurgeOptions {
  idempotencyKey?: string | null;
  requestId?: string | null;
  /** Milliseconds per simulated status step. */
  stepMs: number;
}

/** Most targets in one purge request. */
export const MAX_PURGE_TARGETS = 100;
const MAX_TARGET_LENGTH = 2048;

/** Parses one target; returns its normalized URL or null. */
function normalizeTarget(type: "url" | "directory", target: unknown, domain: string, protocol: string): string | null {
  if (typeof target !== "string" || target.length === 0 || target.length > MAX_TARGET_LENGTH) return null;
  let text = target;
  if (type === "directory" && text.startsWith("/")) {
    if (text.startsWith("//")) return null;
    text = `${protocol}://${domain}${text}`;
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  if (url.username || url.password || url.port || target.includes("#")) return null;
  if (url.hostname.replace(/\.$/, "") !== domain) return null;
  url.hostname = domain;
  if (type === "directory" && (!url.pathname.endsWith("/") || url.search)) return null;
  return url.href;
}

/**
 * Validates a purge input for a domain.
 * @throws AppError `invalid_request` (400) when the input is not an object; `validation_failed`
 *   (422) with field `type`, `targets` or `targets[i]`
 */
function validatePurgeInput(input: PurgeInput, domain: string, protocol: string): { type: "url" | "directory"; targets: string[] } {
  const { type, targets } = requireJsonObject(input);
  if (type !== "url" && type !== "directory") throw invalidInput("type", 'must be "url" or "directory"');
  if (!Array.isArray(targets) || targets.length < 1 || targets.length > MAX_PURGE_TARGETS) {
    throw invalidInput("targets", `must be an array of 1 to ${MAX_PURGE_TARGETS} items`);
  }
  const normalized: string[] = [];
  targets.forEach((target, i) => {
    const url = normalizeTarget(type, target, domain, protocol);
    if (!url) {
      throw invalid(
        `targets[${i}]`,
        type === "url"
          ? `targets[${i}] must be an absolute http(s) URL on ${domain}`
          : `targets[${i}] must be a directory on ${domain}: an absolute URL or a path starting and ending with "/"`,
      );
    }
    if (!normalized.includes(url)) normalized.push(url);
  });
  return { type, targets: normalized };
}

/** A domain named in a path, normalized. @throws AppError `not_found` (404) "Domain not found" when it is no host name */
function domainName(domain: string): string {
  const name = normalizeHostname(domain);
  if (!name) throw new AppError("not_found", "Domain not found");
  return name;
}

/**
 * The checks of {@link purgeDomain} that need no database, in its order: the domain's name (404),
 * then the body (422). The REST shim asks them for the answer to a body that lacks a required
 * field, which GraphQL cannot carry (router/rest/cloud.ts); such a body fails before the
 * domain's protocol (read from the database by the service) matters.
 * @throws AppError `not_found` (404) for a malformed name; the errors of the body's validation
 */
export function checkPurgeRequest(domain: string, input: PurgeInput): void {
  validatePurgeInput(input, domainName(domain), "https");
}

/** A `purge_tasks` row (`targets` as JSON text). */
interface PurgeTaskRow {
  id: string;
  domain: string;
  type: "url" | "directory";
  targets: string;
  created_at: string;
}

/** Converts a `purge_tasks` row to a record with its status at `now`. */
function toRecord(row: PurgeTaskRow, stepMs: number, now = Date.now()): PurgeTaskRecord {
  const step = Math.max(1, stepMs);
  const created = Date.parse(row.created_at);
  const reached = Math.max(0, Math.floor((now - created) / step));
  const status: PurgeStatus = reached >= 2 ? "done" : reached >= 1 ? "running" : "pending";
  return {
    id: row.id,
    domain: row.domain,
    type: row.type,
    targets: JSON.parse(row.targets),
    status,
    createdAt: row.created_at,
    completedAt: status === "done" ? new Date(created + 2 * step).toISOString() : null,
  };
}

/**
 * Submits a URL or directory cache purge for a domain of the caller's account
 * (docs/api/cloud.md §4 `POST /domains/{domain}/purge`; docs/architecture.md §8 purge body; issue 3 item 5).
 * @param domain the domain name from the path (case-insensitive)
 * @param input `{type: "url"|"directory", targets: string[]}` ({@link PurgeInput})
 * @param opts `idempotencyKey` (Stripe semantics), `stepMs` (simulator step)
 * @returns the task, and whether this is a replay of an earlier request
 * @throws AppError `invalid_request` (400) for an input that is not an object; `validation_failed`
 *   (422) with field `type`, `targets` or `targets[i]`; `not_found` (404) "Domain not found" for
 *   a domain outside the caller's account; `conflict` (409) when the domain's review was
 *   rejected, and for idempotency conflicts
 */
export async function purgeDomain(
  db: Db,
  caller: Pick<Caller, "keyId" | "accountId">,
  domain: string,
  input: PurgeInput,
  opts: PurgeOptions,
): Promise<{ task: PurgeTaskRecord; replayed: boolean }> {
  const name = domainName(domain);
  // The protocol only matters for bare directory paths; validation needs the domain's row for it,
  // but the 404 comes after validation (docs/architecture.md §4), so the row is read here without the account
  // filter, used for nothing else, and the ownership check happens inside the transaction.
  const row = await db("domains").where("domain", name).first("protocol");
  const valid = validatePurgeInput(input, name, row?.protocol ?? "https");
  const { result, replayed } = await withIdempotency(
    db,
    { accountId: caller.accountId, key: opts.idempotencyKey, operation: "domains.purge", request: { domain: name, body: toSpecShape(input) } },
    async (trx: Knex.Transaction) => {
      const record = await getDomain(trx, caller, domain, opts.stepMs);
      if (record.reviewStatus === "rejected") {
        throw new AppError("conflict", "Domain review was rejected; it cannot be purged", { field: "domain" });
      }
      const now = nowIso();
      const taskRow = {
        id: newId("purge"),
        account_id: caller.accountId,
        domain: record.domain,
        type: valid.type,
        targets: JSON.stringify(valid.targets),
        created_at: now,
      };
      await trx("purge_tasks").insert(taskRow);
      return toRecord(taskRow, opts.stepMs, Date.parse(now));
    },
  );
  return { task: result, replayed };
}

/**
 * Reads a purge task of the caller's account with its current status (issue 3 item 5: "a task id
 * whose state can be read").
 * @param id the task id (`purge_…`)
 * @param stepMs milliseconds per simulated status step
 * @returns the task
 * @throws AppError `not_found` (404) "Purge task not found" when unknown or another account's
 */
export async function getPurgeTask(db: Db | Knex.Transaction, caller: Pick<Caller, "accountId">, id: string, stepMs: number): Promise<PurgeTaskRecord> {
  const [task] = await getPurgeTasksByIds(db, caller, [id], stepMs);
  if (!task) throw new AppError("not_found", "Purge task not found");
  return task;
}

/**
 * Reads purge tasks of the caller's account by id in one query, with their current statuses
 * (for DataLoader: `_entities`, `node`, `nodes`).
 * @param ids purge ids (any strings)
 * @param stepMs milliseconds per simulated status step
 * @returns one entry per id, null where unknown or another account's
 */
export async function getPurgeTasksByIds(
  db: Db | Knex.Transaction,
  caller: Pick<Caller, "accountId">,
  ids: readonly string[],
  stepMs: number,
): Promise<(PurgeTaskRecord | null)[]> {
  const rows: PurgeTaskRow[] = await db("purge_tasks")
    .whereIn("id", [...new Set(ids)])
    .andWhere("account_id", caller.accountId);
  const now = Date.now();
  const byId = new Map(rows.map((row) => [row.id, toRecord(row, stepMs, now)]));
  return ids.map((id) => byId.get(id) ?? null);
}

/**
 * Lists the newest purge tasks of one domain of the caller's account, newest first (issue 3
 * item 5; GraphQL `Domain.purgeTasks(first)`).
 * @param domain the domain name (case-insensitive)
 * @param first how many tasks, 1-100
 * @param stepMs milliseconds per simulated status step
 * @returns at most `first` tasks, newest first (ties broken by id, descending)
 * @throws AppError `not_found` (404) "Domain not found" for a domain outside the caller's
 *   account; `invalid_request` (400, field `first`) when `first` is not an integer from 1 to 100
 */
export async function listPurgeTasks(
  db: Db | Knex.Transaction,
  caller: Pick<Caller, "accountId">,
  domain: string,
  first: number,
  stepMs: number,
): Promise<PurgeTaskRecord[]> {
  if (!Number.isInteger(first) || first < 1 || first > 100) {
    throw new AppError("invalid_request", "first must be an integer from 1 to 100", { field: "first" });
  }
  const record = await getDomain(db, caller, domain, stepMs);
  const rows = await db("purge_tasks")
    .where({ domain: record.domain, account_id: caller.accountId })
    .orderBy([
      { column: "created_at", order: "desc" },
      { column: "id", order: "desc" },
    ])
    .limit(first);
  const now = Date.now();
  return rows.map((row: PurgeTaskRow) => toRecord(row, stepMs, now));
}

/**
 * The newest purge tasks of many domains of the caller's account in one SQL statement (GraphQL
 * `Domain.purgeTasks`, batched per request): what {@link listPurgeTasks} returns for each domain
 * the caller holds. A domain outside the caller's account has no tasks here (its parent record
 * was already read for the caller).
 * @param domains domain names as stored (lower case; duplicates allowed)
 * @param first how many tasks per domain, 1-100
 * @param stepMs milliseconds per simulated status step
 * @returns each domain's tasks, newest first (ties broken by id, descending)
 * @throws AppError `invalid_request` (400, field `first`) when `first` is not an integer from 1 to 100
 */
export async function listPurgeTasksOfDomains(
  db: Db | Knex.Transaction,
  caller: Pick<Caller, "accountId">,
  domains: readonly string[],
  first: number,
  stepMs: number,
): Promise<Map<string, PurgeTaskRecord[]>> {
  if (!Number.isInteger(first) || first < 1 || first > 100) {
    throw new AppError("invalid_request", "first must be an integer from 1 to 100", { field: "first" });
  }
  const rowsByDomain = await firstRowsByParent<PurgeTaskRow>(
    db as Db,
    db("purge_tasks").select("*").where("account_id", caller.accountId),
    "domain",
    domains,
    byCreation(),
    first,
  );
  const now = Date.now();
  return new Map([...rowsByDomain].map(([domain, rows]) => [domain, rows.map((row) => toRecord(row, stepMs, now))]));
}
