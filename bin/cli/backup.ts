/**
 * `switchyard backup FILE` and `switchyard restore FILE`: SQLite only (README "Backups and
 * upgrades"; ADR 0013). A refusal (PostgreSQL, a file in the way) is one line and exit 1.
 */
import type { Command } from "commander";
import { loadConfig } from "../../src/config.ts";
import type { Act } from "./shared.ts";

/** Registers `backup` and `restore` on the program. */
export function registerBackupCommands(program: Command, act: Act): void {
  act(
    program
      .command("backup")
      .description("copy the SQLite database into FILE while the server runs (PostgreSQL: pg_dump, see README)")
      .argument("<FILE>", "the backup file to write (must not exist)"),
    async (file) => {
      const config = loadConfig();
      const { backupDatabase } = await import("../../src/db/backup.ts");
      const { describeDatabase } = await import("../../src/db/index.ts");
      const backup = await backupDatabase(config, file!);
      process.stderr.write(`database: ${describeDatabase(config)}\n`);
      console.log(`backed up to ${backup.file} (${backup.bytes} bytes, schema ${backup.schemaVersion ?? "none"})`);
    },
  );

  act(
    program
      .command("restore")
      .description("install a backup as the SQLite database of an empty DATA_DIR (never replaces one; PostgreSQL: pg_restore)")
      .argument("<FILE>", "a file written by switchyard backup"),
    async (file) => {
      const config = loadConfig();
      const { restoreDatabase } = await import("../../src/db/backup.ts");
      const { describeDatabase } = await import("../../src/db/index.ts");
      const restored = await restoreDatabase(config, file!);
      process.stderr.write(`database: ${describeDatabase(config)}\n`);
      const pending = restored.pending.length ? `; ${restored.pending.length} migrations pending, applied by start or migrate` : "";
      console.log(`restored ${restored.file} (schema ${restored.schemaVersion}${pending}); next: switchyard verify, then switchyard start`);
    },
  );
}
