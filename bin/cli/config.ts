/**
 * `switchyard config check` and the `--env-file` option (README "Configuration"): settings read
 * from a file through Node's own env-file parser, and the effective configuration printed with
 * its secrets masked, checked as a start checks it.
 */
import fs from "node:fs";
import { parseEnv } from "node:util";
import type { Command } from "commander";
import { ConfigError, effectiveSettings, loadConfig } from "../../src/config.ts";
import { assertDistinctPorts } from "../ports.ts";
import { ALL_ROLES, checkRoleSettings } from "../roles.ts";
import { group, type Act } from "./shared.ts";
import { parseRoles } from "./start.ts";

/** The `--env-file FILE` option's help text (start and config check). */
export const ENV_FILE_HELP = "read settings from FILE first (KEY=VALUE lines, as .env.example; variables already in the environment win)";

/**
 * Loads FILE into `process.env` through Node's own env-file parser (`util.parseEnv`, dotenv
 * syntax, as `node --env-file`); a variable already set in the environment keeps its value.
 * (The file is read here rather than by `process.loadEnvFile`, which ends the process on a
 * missing file instead of throwing.)
 * @param file the `--env-file` value; undefined: nothing to load
 * @throws ConfigError in one line when the file cannot be read
 */
export function loadEnvFileOption(file: string | undefined): void {
  if (file === undefined) return;
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : code === "EISDIR" ? "is a folder" : (error as Error).message;
    throw new ConfigError(`--env-file: cannot read ${file}: ${reason}`);
  }
  for (const [name, value] of Object.entries(parseEnv(text))) process.env[name] ??= value;
}

/** Registers `config` and `config check` on the program. */
export function registerConfigCommands(program: Command, act: Act): void {
  const config = group(program, "config", "the configuration");
  act(
    config
      .command("check")
      .description("print the effective configuration (secrets masked) and check it as start does, for ROLES (default all); exit 1 on a problem")
      .argument("[ROLES]", "comma-separated roles: router, generation, cloud")
      .option("--env-file <FILE>", ENV_FILE_HELP),
    async function (roleArg) {
      loadEnvFileOption(this.opts().envFile);
      const roles = parseRoles(roleArg) ?? ALL_ROLES;
      const rows = effectiveSettings();
      const width = Math.max(...rows.map((r) => r.name.length));
      for (const row of rows) console.log(`${row.name.padEnd(width)}  ${row.value}${row.source === "default" ? "  (default)" : ""}`);
      // The checks a start makes before it connects to anything (a database, Redis or a port in
      // use are checked by the start itself, and by /readyz once it runs).
      const settings = loadConfig();
      checkRoleSettings(settings, roles);
      assertDistinctPorts(settings, roles);
      process.stderr.write(`configuration is valid for ${roles.join(", ")}\n`);
    },
  );
}
