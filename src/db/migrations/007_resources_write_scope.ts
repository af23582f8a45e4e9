/**
 * The `resources:write` scope (ADR 0007): `setUsageThreshold`, a write, needed only
 * `resources:read` before. Every key that holds `resources:read` gets `resources:write`, so every
 * key that could set a threshold still can; a key created afterwards holds it only when asked
 * for (or by default, with every scope).
 *
 * `api_keys.scopes` is a JSON array in a text column on SQLite and PostgreSQL alike: the rows are
 * narrowed with LIKE and each array is rewritten in JavaScript, the same on both.
 */
import type { Knex } from "knex";

const READ = "resources:read";
const WRITE = "resources:write";

/** Rewrites the scopes of every key whose list `change` alters. */
async function rewrite(knex: Knex, like: string, change: (scopes: string[]) => string[] | null): Promise<void> {
  const rows: { id: string; scopes: string }[] = await knex("api_keys").where("scopes", "like", like).select("id", "scopes");
  for (const row of rows) {
    const scopes: unknown = JSON.parse(row.scopes);
    if (!Array.isArray(scopes)) continue;
    const next = change(scopes as string[]);
    if (next)
      await knex("api_keys")
        .where({ id: row.id, scopes: row.scopes })
        .update({ scopes: JSON.stringify(next) });
  }
}

export async function up(knex: Knex): Promise<void> {
  await rewrite(knex, `%"${READ}"%`, (scopes) => {
    if (!scopes.includes(READ) || scopes.includes(WRITE)) return null;
    const next = [...scopes];
    next.splice(next.indexOf(READ) + 1, 0, WRITE);
    return next;
  });
}

export async function down(knex: Knex): Promise<void> {
  await rewrite(knex, `%"${WRITE}"%`, (scopes) => (scopes.includes(WRITE) ? scopes.filter((s) => s !== WRITE) : null));
}
