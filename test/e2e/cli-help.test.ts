import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LATEST_MIGRATION } from "../../src/db/migrations/index.ts";
import { runCli } from "../support/process.ts";

const README = fs.readFileSync(new URL("../../README.md", import.meta.url), "utf8");
const VERSION = JSON.parse(fs.readFileSync(new URL("../../package.json", import.meta.url), "utf8")).version as string;

/** Names in the "Commands:" part of a commander help text. */
function commandsOf(help: string): string[] {
  const section = help.split(/^Commands:\n/m)[1] ?? "";
  return [...section.split(/\n\n/)[0]!.matchAll(/^ {2}([a-z][a-z-]*)/gm)].map((m) => m[1]!);
}

/** Long options in the "Options:" part of a help text. */
function optionsOf(help: string): string[] {
  const section = help.split(/^Options:\n/m)[1] ?? "";
  return [...section.split(/\n\n/)[0]!.matchAll(/^ {2}(?:-\w, )?(--[a-z][a-z-]*)/gm)].map((m) => m[1]!);
}

/** Runs `n` tasks at a time (CLI processes on a shared two-core machine). */
async function inTurns<T, R>(items: T[], n: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await work(items[i]!);
      }
    }),
  );
  return results;
}

describe("`switchyard --help` and friends, as a newcomer explores the CLI", () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-cli-help-"));
  // A broken setting must not stop help: help reads no configuration and opens nothing.
  const env = { DATA_DIR: dataDir, PORT: "abc" };
  /** Help text of every command path ("" = the program), found by walking the help output. */
  const help = new Map<string, { code: number | null; stdout: string; stderr: string }>();
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  beforeAll(async () => {
    let level = [""];
    while (level.length) {
      const runs = await inTurns(level, 3, (p) => runCli([...(p ? p.split(" ") : []), "--help"], env));
      const next: string[] = [];
      level.forEach((p, i) => {
        help.set(p, runs[i]!);
        for (const name of commandsOf(runs[i]!.stdout)) if (name !== "help") next.push(p ? `${p} ${name}` : name);
      });
      level = next;
    }
  }, 180_000);

  it("answers --help on the program and on every command and subcommand with its usage and exit 0, opening no database", () => {
    expect(help.size).toBeGreaterThan(20);
    for (const [p, run] of help) {
      expect({ command: p, code: run.code, stderr: run.stderr }).toEqual({ command: p, code: 0, stderr: "" });
      expect(run.stdout).toMatch(new RegExp(`^Usage: switchyard${p ? ` ${p}` : ""} `));
    }
    expect(commandsOf(help.get("keys")!.stdout)).toEqual(expect.arrayContaining(["create", "list", "show", "disable", "enable", "topup"]));
    // `verify --help` used to run verify, which creates the database.
    expect(fs.readdirSync(dataDir)).toEqual([]);
  });

  it("prints package.json's version and the schema version this build migrates to with --version, opening no database", async () => {
    const run = await runCli(["--version"], env);
    expect(run).toEqual({ code: 0, stdout: `switchyard ${VERSION} (schema ${LATEST_MIGRATION})\n`, stderr: "" });
    expect(LATEST_MIGRATION).toMatch(/^\d{3}_[a-z_]+$/);
    expect(fs.readdirSync(dataDir)).toEqual([]);
  });

  it("answers an unknown command, at the top or under keys, with 'unknown command' and the usage on stderr, exit 2", async () => {
    const top = await runCli(["frobnicate"], env);
    expect(top.code).toBe(2);
    expect(top.stdout).toBe("");
    expect(top.stderr).toMatch(/^switchyard: unknown command: frobnicate\n\nUsage: switchyard \[options\] \[command\]/);
    const nested = await runCli(["keys", "frobnicate"], env);
    expect(nested.code).toBe(2);
    expect(nested.stderr).toMatch(/^switchyard: unknown command: keys frobnicate\n\nUsage: switchyard keys /);
    expect(fs.readdirSync(dataDir)).toEqual([]);
  });

  it("exits 2 with the command's usage for an unknown option, a missing argument or no command at all", async () => {
    const cases = [["keys", "list", "--frobnicate"], ["keys", "show"], ["keys"], []];
    const runs = await inTurns(cases, 2, (args) => runCli(args, env));
    runs.forEach((run, i) => {
      expect({ args: cases[i], code: run.code }).toEqual({ args: cases[i], code: 2 });
      expect(run.stderr).toMatch(/Usage: switchyard/);
    });
    expect(runs[0]!.stderr).toMatch(/^switchyard: unknown option '--frobnicate'/);
    expect(runs[1]!.stderr).toMatch(/^switchyard: missing required argument 'ID'/);
  });

  it("matches the README's CLI table: every command and option in it exists in --help, and every one in --help is in it", () => {
    const section = README.split(/^## CLI\n/m)[1]!.split(/^## /m)[0]!;
    const rows = section.split("\n").filter((line) => /^\| `/.test(line));
    expect(rows.length).toBeGreaterThan(10);
    /** README: command path → the long options its rows mention ("" = the program's own). */
    const documented = new Map<string, Set<string>>();
    for (const row of rows) {
      const cell = row.slice(1).split(/(?<!\\)\|/)[0]!;
      for (const [, usage] of cell.matchAll(/`([^`]+)`/g)) {
        const words = usage!.replace(/\\\|/g, "|").split(/\s+/);
        const commandWords: string[] = [];
        for (const word of words) {
          if (!/^[a-z][a-z-]*$/.test(word)) break;
          commandWords.push(word);
        }
        const key = commandWords.join(" ");
        const options = documented.get(key) ?? new Set<string>();
        for (const [option] of usage!.matchAll(/--[a-z][a-z-]*/g)) options.add(option);
        documented.set(key, options);
      }
    }
    // Commands: the leaves of the help tree (commands without subcommands), the commands that
    // also run on their own (`migrate`, beside `migrate status`), and `help`.
    const leaves = [...help].filter(([p, run]) => p && commandsOf(run.stdout).length === 0).map(([p]) => p);
    const runOnTheirOwn = ["migrate"];
    expect([...documented.keys()].filter(Boolean).sort()).toEqual([...leaves, ...runOnTheirOwn, "help"].sort());
    // Options, both ways (--help is everyone's: documented once, on the program).
    for (const [p, options] of documented) {
      if (p === "help") continue;
      const shown = optionsOf(help.get(p)!.stdout).filter((o) => p === "" || o !== "--help");
      expect({ command: p, options: [...options].sort() }).toEqual({ command: p, options: shown.sort() });
    }
  });
});
