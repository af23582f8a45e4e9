/**
 * Simulated CDN usage per resource (docs/api/cloud.md §4 `GET /usage/bandwidth`,
 * `GET /usage/traffic`, §6 `usage.threshold_reached`; docs/architecture.md §8 bandwidth and traffic shapes;
 * issue 3 item 6).
 *
 * The vendor simulator is a pure function of the resource id and time, so every instance and
 * every restart gives the same numbers:
 * - Time is cut into 300-second slots aligned to the Unix epoch. A slot's bandwidth (bits per
 *   second, an integer) is `base × daily × noise`: `base` is 20-200 Mbps chosen by a hash of the
 *   resource id, `daily` is a sine over the UTC day between 0.5 and 1.5 peaking at 13:00 UTC
 *   (21:00 in China), and `noise` is 0.85-1.15 from a hash of (resource id, slot).
 * - A slot carries traffic only when it starts at or after the resource's `created_at` and has
 *   ended by now (usage is reported per completed five-minute slot, as CDN logs are).
 * - A slot's traffic in bytes is `floor(bps × 300 / 8)`: traffic is exactly the sum of slot bytes,
 *   so daily items, their total and the cumulative usage behind thresholds all agree, and they
 *   agree with the 300-second bandwidth curve.
 *
 * Decisions where the spec is silent:
 * - Bandwidth `start`/`end` are ISO 8601 date-times that must carry a time-zone designator (`Z`
 *   or `±hh:mm`); seconds and fractions are optional. Anything else is 400 `invalid_request`
 *   (field `start` or `end`). `start` must be before `end` (equal is 400 on `start` too: the
 *   range is half-open and would be empty).
 * - The interval is 300 s for ranges up to 1 day, 3600 s up to 7 days, 14400 s beyond (at most
 *   31 days, so at most 289, 169 or 187 points). Points are the aligned buckets `[t, t+interval)`
 *   that overlap `[start, end)`; a point's `bps` is the floor of the mean of its 300-s slots, and
 *   `peak_bps` is the largest point (0 without points).
 * - Traffic `start`/`end` are calendar dates `YYYY-MM-DD`, inclusive, in UTC days; at most 31
 *   days.
 * - Ranges longer than 31 days are 400 on field `end`; start after end is 400 on field `start`.
 * - Usage is not cut at `expires_at` (a renewal would otherwise rewrite history); expired
 *   resources are skipped by the threshold check.
 * - A threshold is a positive integer of bytes, compared with the cumulative traffic since the
 *   resource was created. It fires once per crossing; setting a different threshold (or clearing
 *   it) re-arms it, setting the same value again does not.
 */
import type { Knex } from "knex";
import { AppError } from "../errors.ts";
import { nowIso, type Db } from "../db/index.ts";
import type { Caller } from "../auth/keys.ts";
import type { ResourceRow } from "./resources.ts";
import { appendOutbox } from "../events/outbox.ts";

/** Length of a simulator slot in seconds. */
export const SLOT_SECONDS = 300;
const SLOT_MS = SLOT_SECONDS * 1000;
const DAY_MS = 86_400_000;
/** Longest range a usage query may cover, in days. */
export const MAX_RANGE_DAYS = 31;

/** A bandwidth curve (docs/architecture.md §8 bandwidth). */
export interface BandwidthUsage {
  resourceId: string;
  intervalSeconds: number;
  /** The largest point's `bps`. */
  peakBps: number;
  /** One point per aligned interval; `time` is the interval's start, ISO 8601 UTC. */
  points: { time: string; bps: number }[];
}

/** Traffic per UTC day (docs/architecture.md §8 traffic); `totalBytes` is exactly the sum of the items. */
export interface TrafficUsage {
  resourceId: string;
  totalBytes: number;
  items: { date: string; bytes: number }[];
}

/** A usage query: resource id and the range as received (strings from the query string). */
export interface UsageQuery {
  resourceId: string;
  start: string;
  end: string;
}

// ---------------------------------------------------------------------------------------------
// The simulator

/** 32-bit FNV-1a of a string. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** murmur3's 32-bit finalizer: a well-mixed hash of a 32-bit integer. */
function mix32(value: number): number {
  let h = value >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The per-resource constants of the simulator. */
function seedOf(resourceId: string): { seed: number; baseBps: number } {
  const seed = fnv1a(resourceId);
  const baseBps = (20 + (mix32(seed ^ 0x5bd1e995) % 181)) * 1_000_000;
  return { seed, baseBps };
}

/** Bandwidth of one slot (integer bps), ignoring creation time. */
function slotBps(seed: number, baseBps: number, slot: number): number {
  const mid = slot * SLOT_SECONDS + SLOT_SECONDS / 2;
  const dayFraction = (mid % 86_400) / 86_400;
  // sin peaks at a quarter turn: 0.25 + 0.2917 ≈ 0.5417 of the day = 13:00 UTC.
  const daily = 1 + 0.5 * Math.sin(2 * Math.PI * (dayFraction - 0.2917));
  const noise = 0.85 + 0.3 * (mix32(seed ^ Math.imul(slot, 0x9e3779b1)) / 0x1_0000_0000);
  return Math.round(baseBps * daily * noise);
}

/** Bytes carried by a slot of `bps` bits per second. */
function slotBytes(bps: number): number {
  return Math.floor((bps * SLOT_SECONDS) / 8);
}

/** Whether slot `slot` carries traffic for a resource created at `createdMs`, as of `nowMs`. */
function slotCounts(slot: number, createdMs: number, nowMs: number): boolean {
  const start = slot * SLOT_MS;
  return start >= createdMs && start + SLOT_MS <= nowMs;
}

/**
 * Simulated bandwidth of a resource in one 300-second slot, before clipping to its lifetime
 * (the vendor simulator behind docs/api/cloud.md §4 `/usage/bandwidth`; issue 3 item 6).
 * @param resourceId the resource id (the seed)
 * @param timeMs any instant inside the slot, Unix milliseconds
 * @returns bits per second, an integer; deterministic per (resource, slot)
 * @throws nothing
 */
export function simulatedSlotBps(resourceId: string, timeMs: number): number {
  const { seed, baseBps } = seedOf(resourceId);
  return slotBps(seed, baseBps, Math.floor(timeMs / SLOT_MS));
}

/**
 * Cumulative simulated traffic of a resource from its creation up to `nowMs` (completed slots
 * only). This is what usage thresholds compare with (docs/api/cloud.md §6
 * `usage.threshold_reached`; issue 3 item 6).
 * @param resourceId the resource id (the seed)
 * @param createdAt the resource's `created_at`, ISO 8601
 * @param nowMs Unix milliseconds
 * @returns bytes, an integer (0 when `nowMs` is before the first complete slot)
 * @throws nothing
 */
export function cumulativeTrafficBytes(resourceId: string, createdAt: string, nowMs: number): number {
  return trafficBetween(resourceId, Date.parse(createdAt), nowMs, Date.parse(createdAt), nowMs);
}

/** Bytes of the counting slots whose start lies in `[fromMs, toMs)`. */
function trafficBetween(resourceId: string, fromMs: number, toMs: number, createdMs: number, nowMs: number): number {
  const { seed, baseBps } = seedOf(resourceId);
  let total = 0;
  for (let slot = Math.ceil(Math.max(fromMs, createdMs) / SLOT_MS); slot * SLOT_MS < toMs; slot++) {
    if (!slotCounts(slot, createdMs, nowMs)) continue;
    total += slotBytes(slotBps(seed, baseBps, slot));
  }
  return total;
}

// ---------------------------------------------------------------------------------------------
// Parameters

function badParameter(field: string, message: string): AppError {
  return new AppError("invalid_request", message, { field });
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|([+-])(\d{2}):?(\d{2}))$/i;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

function validDate(year: number, month: number, day: number): boolean {
  return month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);
}

/** Unix milliseconds of a UTC calendar time (month 1-12); unlike Date.UTC, years 0-99 stay as given. */
function utcMillis(year: number, month: number, day: number, hour = 0, minute = 0, second = 0, millis = 0): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, millis);
  return date.getTime();
}

/**
 * Parses an ISO 8601 date-time with a time-zone designator.
 * @returns Unix milliseconds
 * @throws AppError `invalid_request` (400) with `details.field` = `field`
 */
function parseDateTime(value: unknown, field: string): number {
  const match = typeof value === "string" ? DATE_TIME.exec(value) : null;
  if (!match) throw badParameter(field, `${field} must be an ISO 8601 date-time with a time zone, for example 2025-01-31T00:00:00Z`);
  const [, y, mo, d, h, mi, s, frac, zone, sign, oh, om] = match;
  const year = Number(y),
    month = Number(mo),
    day = Number(d),
    hour = Number(h),
    minute = Number(mi),
    second = Number(s ?? 0);
  const offsetMinutes = zone!.toUpperCase() === "Z" ? 0 : (sign === "-" ? -1 : 1) * (Number(oh) * 60 + Number(om));
  if (!validDate(year, month, day) || hour > 23 || minute > 59 || second > 59 || Number(oh ?? 0) > 23 || Number(om ?? 0) > 59) {
    throw badParameter(field, `${field} is not a valid date-time`);
  }
  const millis = frac ? Math.floor(Number(`0.${frac}`) * 1000) : 0;
  return utcMillis(year, month, day, hour, minute, second, millis) - offsetMinutes * 60_000;
}

/**
 * Parses a calendar date `YYYY-MM-DD`.
 * @returns Unix milliseconds of its UTC midnight
 * @throws AppError `invalid_request` (400) with `details.field` = `field`
 */
function parseDate(value: unknown, field: string): number {
  const match = typeof value === "string" ? DATE.exec(value) : null;
  if (!match || !validDate(Number(match[1]), Number(match[2]), Number(match[3]))) {
    throw badParameter(field, `${field} must be a date in the form YYYY-MM-DD`);
  }
  return utcMillis(Number(match[1]), Number(match[2]), Number(match[3]));
}

function requireResourceId(value: unknown): string {
  if (typeof value !== "string" || value.length === 0 || value.length > 40) {
    throw badParameter("resource_id", "resource_id is required");
  }
  return value;
}

/** The caller's resource row. @throws AppError `not_found` (404) "Resource not found" */
async function loadResource(db: Db | Knex.Transaction, caller: Pick<Caller, "accountId">, resourceId: string): Promise<ResourceRow> {
  const row = await db("resources").where({ id: resourceId, account_id: caller.accountId }).first();
  if (!row) throw new AppError("not_found", "Resource not found");
  return row;
}

/** The bandwidth interval for a range length (see the module decisions). */
function intervalFor(rangeMs: number): number {
  if (rangeMs <= DAY_MS) return 300;
  if (rangeMs <= 7 * DAY_MS) return 3600;
  return 14_400;
}

// ---------------------------------------------------------------------------------------------
// Queries

/**
 * The bandwidth curve of a resource over a time range (docs/api/cloud.md §4
 * `GET /usage/bandwidth?resource_id=&start=&end=`; docs/architecture.md §8 bandwidth).
 * @param query `resourceId`; `start` and `end` ISO 8601 date-times with a time zone
 * @returns points at a fixed interval (300, 3600 or 14400 seconds) aligned to it, and the peak
 * @throws AppError `invalid_request` (400): field `resource_id` when missing, `start`/`end` when
 *   unparsable, `start` when start is not before end, `end` when the range exceeds 31 days;
 *   `not_found` (404) "Resource not found" for an unknown resource or another account's
 */
export async function bandwidthUsage(db: Db | Knex.Transaction, caller: Pick<Caller, "accountId">, query: UsageQuery): Promise<BandwidthUsage> {
  const resourceId = requireResourceId(query.resourceId);
  const startMs = parseDateTime(query.start, "start");
  const endMs = parseDateTime(query.end, "end");
  if (startMs >= endMs) throw badParameter("start", "start must be before end");
  if (endMs - startMs > MAX_RANGE_DAYS * DAY_MS) throw badParameter("end", `The range must not exceed ${MAX_RANGE_DAYS} days`);
  const resource = await loadResource(db, caller, resourceId);
  const createdMs = Date.parse(resource.created_at);
  const nowMs = Date.now();
  const { seed, baseBps } = seedOf(resourceId);
  const intervalSeconds = intervalFor(endMs - startMs);
  const intervalMs = intervalSeconds * 1000;
  const slotsPerPoint = intervalSeconds / SLOT_SECONDS;
  const points: { time: string; bps: number }[] = [];
  for (let t = Math.floor(startMs / intervalMs) * intervalMs; t < endMs; t += intervalMs) {
    let sum = 0;
    const first = t / SLOT_MS;
    for (let slot = first; slot < first + slotsPerPoint; slot++) {
      if (slotCounts(slot, createdMs, nowMs)) sum += slotBps(seed, baseBps, slot);
    }
    points.push({ time: new Date(t).toISOString(), bps: Math.floor(sum / slotsPerPoint) });
  }
  const peakBps = points.reduce((max, p) => Math.max(max, p.bps), 0);
  return { resourceId, intervalSeconds, peakBps, points };
}

/**
 * Traffic of a resource per UTC day over an inclusive date range (docs/api/cloud.md §4
 * `GET /usage/traffic?resource_id=&start=&end=`; docs/architecture.md §8 traffic).
 * @param query `resourceId`; `start` and `end` dates `YYYY-MM-DD`, inclusive
 * @returns one item per day (integer bytes) and their exact sum
 * @throws AppError `invalid_request` (400): field `resource_id` when missing, `start`/`end` when
 *   unparsable, `start` when start is after end, `end` when the range exceeds 31 days;
 *   `not_found` (404) "Resource not found" for an unknown resource or another account's
 */
export async function trafficUsage(db: Db | Knex.Transaction, caller: Pick<Caller, "accountId">, query: UsageQuery): Promise<TrafficUsage> {
  const resourceId = requireResourceId(query.resourceId);
  const startMs = parseDate(query.start, "start");
  const endMs = parseDate(query.end, "end");
  if (startMs > endMs) throw badParameter("start", "start must not be after end");
  if ((endMs - startMs) / DAY_MS + 1 > MAX_RANGE_DAYS) throw badParameter("end", `The range must not exceed ${MAX_RANGE_DAYS} days`);
  const resource = await loadResource(db, caller, resourceId);
  const createdMs = Date.parse(resource.created_at);
  const nowMs = Date.now();
  const items: { date: string; bytes: number }[] = [];
  let totalBytes = 0;
  for (let day = startMs; day <= endMs; day += DAY_MS) {
    const bytes = trafficBetween(resourceId, day, day + DAY_MS, createdMs, nowMs);
    items.push({ date: new Date(day).toISOString().slice(0, 10), bytes });
    totalBytes += bytes;
  }
  return { resourceId, totalBytes, items };
}

// ---------------------------------------------------------------------------------------------
// Thresholds

/**
 * Sets or clears the usage alert threshold of a resource (issue 3 item 6; docs/api/cloud.md §6
 * `usage.threshold_reached`). A different value re-arms the alert; the same value changes
 * nothing.
 * @param bytes a positive integer of bytes of cumulative traffic, or null to clear
 * @returns the resource id and its threshold now
 * @throws AppError `validation_failed` (422, field `threshold_bytes`) for anything but a positive
 *   safe integer or null; `not_found` (404) "Resource not found"
 */
export async function setUsageThreshold(
  db: Db,
  caller: Pick<Caller, "accountId">,
  resourceId: string,
  bytes: number | null,
): Promise<{ resourceId: string; thresholdBytes: number | null }> {
  if (bytes !== null && (typeof bytes !== "number" || !Number.isSafeInteger(bytes) || bytes < 1)) {
    throw new AppError("validation_failed", "threshold_bytes must be a positive integer or null", { field: "threshold_bytes" });
  }
  return db.transaction(async (trx) => {
    const row = await loadResource(trx, caller, resourceId);
    const current = row.usage_threshold_bytes == null ? null : Number(row.usage_threshold_bytes);
    if (current !== bytes) {
      await trx("resources").where("id", resourceId).update({ usage_threshold_bytes: bytes, threshold_notified_bytes: null, updated_at: nowIso() });
    }
    return { resourceId, thresholdBytes: bytes };
  });
}

/**
 * Worker step: emits `usage.threshold_reached` for every active resource whose cumulative
 * traffic since creation has reached its threshold and whose alert has not fired for that
 * threshold yet (docs/api/cloud.md §6; docs/architecture.md §6). Each event is written to the outbox in the same
 * transaction as a compare-and-swap of `threshold_notified_bytes`, so concurrent workers emit it
 * once. The callback goes to the key that placed the resource's order.
 * @param options `now` (defaults to the current time)
 * @returns how many events were written
 * @throws nothing of its own (database errors only)
 */
export async function checkUsageThresholds(db: Db, options: { now?: Date | number } = {}): Promise<number> {
  const nowMs = options.now === undefined ? Date.now() : typeof options.now === "number" ? options.now : options.now.getTime();
  const candidates = await db("resources")
    .join("orders", "orders.id", "resources.order_id")
    .where("resources.status", "active")
    .whereNotNull("resources.usage_threshold_bytes")
    .andWhere((q) =>
      q.whereNull("resources.threshold_notified_bytes").orWhereRaw("?? <> ??", ["resources.threshold_notified_bytes", "resources.usage_threshold_bytes"]),
    )
    .select("resources.id", "resources.account_id", "resources.order_id", "resources.created_at", "resources.usage_threshold_bytes", "orders.key_id");
  let emitted = 0;
  for (const row of candidates) {
    const threshold = Number(row.usage_threshold_bytes);
    const used = cumulativeTrafficBytes(row.id, row.created_at, nowMs);
    if (used < threshold) continue;
    const won = await db.transaction(async (trx) => {
      const updated = await trx("resources")
        .where({ id: row.id, usage_threshold_bytes: threshold })
        .andWhere((q) => q.whereNull("threshold_notified_bytes").orWhereNot("threshold_notified_bytes", threshold))
        .update({ threshold_notified_bytes: threshold, updated_at: nowIso() });
      if (updated !== 1) return false;
      await appendOutbox(trx, {
        topic: "usage.threshold_reached",
        accountId: row.account_id,
        aggregateId: row.id,
        keyId: row.key_id,
        payload: { resource_id: row.id, order_id: row.order_id, threshold_bytes: threshold, used_bytes: used },
      });
      return true;
    });
    if (won) emitted++;
  }
  return emitted;
}
