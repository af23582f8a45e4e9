/**
 * What every `switchyard` command shares (docs/adr/0008-cli.md): the usage error, the database
 * opener, option parsers, the table printer and the command-group builder.
 */
import type { Command } from "commander";
import { loadConfig, type Config } from "../../src/config.ts";
import { parseYuan } from "../../src/money.ts";
import { parseInteger, type IntegerRange } from "../../src/integers.ts";
import type { Db } from "../../src/db/index.ts";
import type { Page } from "../../src/pagination.ts";

/** A command used wrongly: its message, then the command's help, on stderr; exit 2. */
export class UsageError extends Error {}

/** Exit code of a usage error (commander's and ours). */
export const USAGE_EXIT = 2;

/** Registers a handler on a command; its numeric result becomes the exit code, a {@link UsageError} a usage error. */
export type Act = (command: Command, handler: (this: Command, ...args: string[]) => Promise<number> | Promise<void>) => Command;

/**
 * Builds the {@link Act} of one program run.
 * @param result where a handler's exit code is written (`-1` keeps `start` running)
 */
export function actFor(result: { code: number }): Act {
  return (command, handler) =>
    command.action(async function (this: Command) {
      try {
        const code = await handler.apply(this, this.processedArgs as string[]);
        if (typeof code === "number") result.code = code;
      } catch (error) {
        if (error instanceof UsageError) this.error(error.message, { exitCode: USAGE_EXIT, code: "switchyard.usage" });
        throw error;
      }
    });
}

/** Opens the database (and says which one on stderr), brings its schema up to date, runs `work`, closes it. */
export async function withDb<T>(work: (db: Db, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const { databaseDescription, migrate, openDb } = await import("../../src/db/index.ts");
  const db = openDb(config);
  try {
    await migrate(db);
    process.stderr.write(`database: ${databaseDescription(db)}\n`);
    return await work(db, config);
  } finally {
    await db.destroy();
  }
}

/** Parses a `--NAME <YUAN>` option into milli-yuan; undefined when absent. @throws UsageError on a bad amount */
export function yuanOption(value: string | undefined, name: string) {
  if (value === undefined) return undefined;
  try {
    return parseYuan(value);
  } catch {
    throw new UsageError(`--${name} must be an amount in yuan with at most three decimals`);
  }
}

/**
 * Parses a `--NAME <N>` whole-number option with the one strict integer reader (src/integers.ts:
 * decimal digits, a `-` only when the range allows negatives; `1e2`, `0x10`, ` 5` refused);
 * undefined when absent.
 * @param range the accepted range (default: any safe integer; the domain then judges the range)
 * @param message the usage error's text (default `--NAME must be a whole number[ from MIN to MAX]`)
 * @throws UsageError when the text is not a whole number within the range
 */
export function integerOption(value: string | undefined, name: string, range?: IntegerRange, message?: string): number | undefined {
  if (value === undefined) return undefined;
  const parsed = parseInteger(value, range);
  if (parsed === null) throw new UsageError(message ?? `--${name} must be a whole number${range ? ` from ${range.min} to ${range.max}` : ""}`);
  return parsed;
}

/** A comma-separated option as a list; undefined when absent. */
export const list = (v?: string) =>
  v
    ? v
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean)
    : undefined;

/** Columns padded to their widest cell; the last column is not padded. */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ")).join("\n");
}

/** A command that only holds subcommands (`keys`, `catalog vendor`...). */
export function group(parent: Command, name: string, description: string): Command {
  const command = parent.command(name).description(description).helpCommand(false);
  reportUnknownCommands(command);
  return command;
}

/** `switchyard X` or `switchyard keys X` for an X that is no command: "unknown command: X", the usage, exit 2. */
export function reportUnknownCommands(command: Command): void {
  command.on("command:*", (operands: string[]) => {
    const path: string[] = [];
    for (let c: Command | null = command; c?.parent; c = c.parent) path.unshift(c.name());
    command.error(`unknown command: ${[...path, operands[0]].join(" ")}`, { exitCode: USAGE_EXIT, code: "commander.unknownCommand" });
  });
}

/** Every item of a paged list. */
export async function allPages<T>(fetchPage: (after: string | null) => Promise<Page<T>>): Promise<T[]> {
  const all: T[] = [];
  let after: string | null = null;
  for (;;) {
    const page: Page<T> = await fetchPage(after);
    all.push(...page.items);
    if (!page.hasNextPage) return all;
    after = page.cursors.at(-1)!;
  }
}
