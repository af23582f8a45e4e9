/**
 * Crash safety of generation tasks (issue 6 item 4; src/generation/recovery.ts):
 * - `expired_at`: when the task's deadline failed it (`Generation timed out`, full refund);
 *   null for every other task. While set, `next_poll_at` schedules the look for a late result.
 * - `late_result` / `late_images`: what the upstream delivered after the deadline had already
 *   failed and refunded the task — recorded, never charged, the status stays 2.
 * - indexes for the recovery sweep: interrupted submissions (`submit_state`, `created_at`) and
 *   overdue open tasks (`status`, `deadline_at`).
 * Open tasks created before this migration get their model's deadline counted from creation.
 */
import type { Knex } from "knex";

/**
 * The models' deadlines in seconds when this migration was written (src/generation/catalog.ts
 * `deadlineSeconds`), kept here: a migration is history and imports no business module
 * (docs/architecture.md §1.2). Model 45 is the image model (10 minutes); every other, 30 minutes.
 */
const DEADLINE_SECONDS: Readonly<Record<number, number>> = { 52: 1800, 51: 1800, 67: 1800, 69: 1800, 39: 1800, 45: 600 };

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable("tasks", (t) => {
    t.string("expired_at", 30);
    t.text("late_result");
    t.text("late_images"); // JSON array
    t.index(["submit_state", "created_at"]);
    t.index(["status", "deadline_at"]);
  });
  const open = await knex("tasks").whereIn("status", [0, 3, 4]).whereNull("deadline_at").select("id", "model_id", "created_at");
  for (const row of open) {
    const seconds = DEADLINE_SECONDS[Number(row.model_id)] ?? 30 * 60;
    const deadline = new Date(Date.parse(row.created_at) + seconds * 1000).toISOString();
    await knex("tasks").where({ id: row.id }).whereNull("deadline_at").update({ deadline_at: deadline });
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable("tasks", (t) => {
    t.dropIndex(["status", "deadline_at"]);
    t.dropIndex(["submit_state", "created_at"]);
    t.dropColumn("late_images");
    t.dropColumn("late_result");
    t.dropColumn("expired_at");
  });
}
