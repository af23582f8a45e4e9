/**
 * `switchyard` commands (docs/architecture.md §2; one file per command group under bin/cli/): start, migrate, compose, keys, customers, catalog, webhooks, channels,
 * backup, restore, config, operators, audit, verify, on commander (docs/adr/0008-cli.md): every command and subcommand answers `--help`.
 * Exit codes: 0 success (and `--help`, `--version`), 1 failure (for `verify`: a discrepancy), 2 bad usage.
 * Every command that opens the database says which one on stderr (`database: sqlite /…/switchyard.db`).
 */
import { Command, CommanderError } from "commander";
import { ConfigError, loadConfig } from "../src/config.ts";
import { isAppError } from "../src/errors.ts";
import { actFor, reportUnknownCommands, USAGE_EXIT, withDb } from "./cli/shared.ts";
import { registerKeyCommands } from "./cli/keys.ts";
import { registerCustomerCommands } from "./cli/customers.ts";
import { registerCatalogCommands } from "./cli/catalog.ts";
import { registerWebhookCommands } from "./cli/webhooks.ts";
import { registerChannelCommands } from "./cli/channels.ts";
import { registerMigrateCommands } from "./cli/migrate.ts";
import { registerBackupCommands } from "./cli/backup.ts";
import { registerOperatorCommands } from "./cli/operators.ts";
import { start } from "./cli/start.ts";
import { LATEST_MIGRATION } from "../src/db/migrations/index.ts";
import { ENV_FILE_HELP, loadEnvFileOption, registerConfigCommands } from "./cli/config.ts";
import { VERSION } from "../src/version.ts";

/** Builds the program: every command, its options and help. Nothing runs until it is parsed. */
function buildProgram(result: { code: number }): Command {
  const program = new Command("switchyard")
    .description("Switchyard: the generation service and the cloud open API as one GraphQL federation, with REST shims.")
    // The schema this build migrates to, not what a database has applied (that is `migrate
    // status`): --version opens nothing and reads no setting.
    .version(`switchyard ${VERSION} (schema ${LATEST_MIGRATION})`, "-V, --version", "print the version and the schema version")
    .helpOption("-h, --help", "show help for a command")
    .configureOutput({ outputError: (text, write) => write(`switchyard: ${text.replace(/^error: /, "")}`) })
    .showHelpAfterError()
    .exitOverride()
    .addHelpText(
      "after",
      "\nEvery command that opens the database prints which one on stderr (database: sqlite PATH, or postgres HOST:PORT/DB).\n" +
        'Settings come from environment variables (README "Configuration"). Exit codes: 0 done, 1 failed, 2 bad usage.',
    );
  reportUnknownCommands(program);

  const act = actFor(result);

  act(
    program
      .command("start")
      .description("start every role in one process (the default), or some for scale-out")
      .argument("[ROLES]", "comma-separated roles: router, generation, cloud (e.g. generation,cloud)")
      .option("--env-file <FILE>", ENV_FILE_HELP)
      .option("--demo", "seed the demo catalog and, on a database without keys, a demo key (the default unless NODE_ENV=production; SEED_DEMO)"),
    async function (this: Command, roles) {
      loadEnvFileOption(this.opts().envFile);
      const config = loadConfig();
      if (this.opts().demo) config.seedDemo = true;
      await start(config, roles);
      return -1; // keep running
    },
  );

  registerMigrateCommands(program, act);

  act(
    program
      .command("compose")
      .description("write schema/supergraph.graphql and schema/api.graphql from subgraphs/*/schema.graphql, and docs/api/openapi/*.json"),
    async () => {
      const { writeProducedFiles } = await import("../router/contract/files.ts");
      for (const path of writeProducedFiles()) console.log(`wrote ${path}`);
    },
  );

  registerKeyCommands(program, act);
  registerCustomerCommands(program, act);
  registerCatalogCommands(program, act);
  registerWebhookCommands(program, act);
  registerChannelCommands(program, act);
  registerBackupCommands(program, act);
  registerConfigCommands(program, act);
  registerOperatorCommands(program, act);

  act(
    program
      .command("verify")
      .description("check balances, running totals, task and order invariants, and the audit rows of operator money writes (exit 1 on a discrepancy)"),
    async () => {
      const { verifyLedger } = await import("../src/ledger/index.ts");
      const { verifyAudit } = await import("../src/audit/log.ts");
      const problems = await withDb(async (db) => [...(await verifyLedger(db)), ...(await verifyAudit(db))]);
      for (const p of problems) console.log(`${p.kind}\t${p.subject}\t${p.detail}`);
      console.log(problems.length ? `${problems.length} discrepancies` : "ledger, running totals, tasks, orders and audit rows verified: no discrepancies");
      return problems.length ? 1 : 0;
    },
  );

  return program;
}

/**
 * Runs the command line.
 * @returns the exit code, or -1 while `start` keeps running
 */
async function main(argv: string[]): Promise<number> {
  const result = { code: 0 };
  try {
    await buildProgram(result).parseAsync(argv, { from: "user" });
  } catch (error) {
    // commander has printed its message (and the usage): `--help` and `--version` exit 0, every
    // other complaint (unknown command or option, missing argument, no command) is bad usage.
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : USAGE_EXIT;
    throw error;
  }
  return result.code;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error) => {
    // One line, no stack: a setting, the database, a port, a business rule (AppError), Redis.
    // LOG_LEVEL=debug (or trace) adds the stack of an error that is none of these.
    const known = isAppError(error) || error instanceof ConfigError;
    const message = error instanceof Error ? error.message : String(error);
    console.error(`switchyard: ${known ? message : message.split("\n")[0]}`);
    if (!known && /^(debug|trace)$/.test(process.env.LOG_LEVEL ?? "")) console.error((error as Error)?.stack);
    process.exit(1);
  },
);
