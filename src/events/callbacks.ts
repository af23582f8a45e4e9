/**
 * Which outbox rows become webhook callbacks, and the exact body of each (docs/api/cloud.md §6;
 * docs/architecture.md §6.5). The dispatcher (dispatcher/publish.ts) stores the body once per delivery.
 */
import { toYuanNumber } from "../money.ts";

/** The cloud events of docs/api/cloud.md §6 delivered as callbacks under their outbox topic. */
export const CLOUD_CALLBACK_EVENTS: readonly string[] = [
  "order.created",
  "order.paid",
  "order.provisioned",
  "order.failed",
  "billing.transaction.created",
  "usage.threshold_reached",
];

/** One callback event derived from an outbox row. */
export interface CallbackEvent {
  /** The callback's `event`. */
  event: string;
  /** The callback's `data`. */
  data: Record<string, unknown>;
}

/**
 * Maps an outbox row to the callbacks it causes (docs/api/cloud.md §6; issue 3 item 9).
 * - The six cloud events of docs/api/cloud.md §6 (`order.*`, `billing.transaction.created`,
 *   `usage.threshold_reached`): one callback named after the topic, `data` = the payload as written.
 * - `task.status_changed`: `task.succeeded` (status 1) or `task.failed` (status 2), and also
 *   `task.refunded` when `refunded` > 0; other statuses cause none. `data` is
 *   `{task_id, status, result, images, error, refunded, updated_at}` with `refunded` in yuan
 *   (a JSON number, docs/architecture.md §3).
 * - Any other topic: none (published to subscribers only).
 * @returns the events, in the order they are delivered
 */
export function callbackEventsFor(topic: string, payload: Record<string, unknown>): CallbackEvent[] {
  if (CLOUD_CALLBACK_EVENTS.includes(topic)) return [{ event: topic, data: payload }];
  if (topic !== "task.status_changed") return [];
  const status = Number(payload.status);
  const refundedMilli = Number(payload.refunded ?? 0);
  const data: Record<string, unknown> = {
    task_id: payload.task_id,
    status,
    result: payload.result ?? null,
    images: payload.images ?? null,
    error: payload.error ?? null,
    refunded: Number.isSafeInteger(refundedMilli) ? toYuanNumber(refundedMilli) : 0,
    updated_at: payload.updated_at ?? null,
  };
  const events: CallbackEvent[] = [];
  if (status === 1) events.push({ event: "task.succeeded", data });
  else if (status === 2) events.push({ event: "task.failed", data });
  else return [];
  if (Number.isSafeInteger(refundedMilli) && refundedMilli > 0) events.push({ event: "task.refunded", data });
  return events;
}

/**
 * The exact callback body (docs/api/cloud.md §6), keys in this order.
 * @param requestId the outbox row's `request_id`, or `evt_<outbox id>` for events no request caused
 */
export function callbackBody(event: CallbackEvent, requestId: string, createdAt: string): string {
  return JSON.stringify({ event: event.event, request_id: requestId, created_at: createdAt, data: event.data });
}
