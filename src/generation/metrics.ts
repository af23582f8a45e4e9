/**
 * Task metrics (docs/architecture.md §2.13; README "Observability"), counted in the process that
 * made each change, right after its transaction committed (aggregate with `sum`):
 * - `switchyard_tasks_submitted_total{model}`: tasks created (the price debited);
 * - `switchyard_tasks_total{model,outcome}`: tasks that reached a final state, once each (the
 *   state changes are compare-and-swaps: one process wins), by {@link TaskOutcome}.
 * `model` is the catalog's model id (a fixed list, src/generation/catalog.ts); every series
 * exists from the start at 0, so `rate()` and `absent()` see it before the first task.
 */
import { Counter, type Registry } from "prom-client";
import { METRIC_PREFIX } from "../observability/metrics.ts";
import { MODEL_IDS } from "./catalog.ts";

/**
 * How a task ended: `succeeded` (status 1; an image task short of images is refunded the
 * difference), or with the full price refunded: `failed` (the provider reported a failure, or
 * a success without output), `rejected` (no channel accepted the submission: 502 or 504),
 * `expired` (still open at its deadline).
 */
export type TaskOutcome = "succeeded" | "failed" | "rejected" | "expired";

const OUTCOMES: readonly TaskOutcome[] = ["succeeded", "failed", "rejected", "expired"];

/** The task counters of a generation process. */
export interface TaskCounters {
  /** A task was created and its price debited. */
  submitted(modelId: number): void;
  /** A task reached a final state (called once per task, by the process that made the change). */
  finished(modelId: number, outcome: TaskOutcome): void;
}

/** Registers the task counters in `registry`, every model and outcome at 0. */
export function countTasks(registry: Registry): TaskCounters {
  const submitted = new Counter({
    name: `${METRIC_PREFIX}tasks_submitted_total`,
    help: "Generation tasks created (price debited), by model id",
    labelNames: ["model"] as const,
    registers: [registry],
  });
  const finished = new Counter({
    name: `${METRIC_PREFIX}tasks_total`,
    help: "Generation tasks that reached a final state, by model id and outcome (succeeded, failed, rejected, expired)",
    labelNames: ["model", "outcome"] as const,
    registers: [registry],
  });
  for (const id of MODEL_IDS) {
    submitted.inc({ model: String(id) }, 0);
    for (const outcome of OUTCOMES) finished.inc({ model: String(id), outcome }, 0);
  }
  return {
    submitted: (modelId) => submitted.inc({ model: String(modelId) }),
    finished: (modelId, outcome) => finished.inc({ model: String(modelId), outcome }),
  };
}
