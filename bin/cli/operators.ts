/**
 * `switchyard operators create|list|disable|enable|token create|token revoke` and `switchyard audit list`
 * (issue 23 §1; docs/adr/0022-operators-and-audit.md). The command line is break-glass access to
 * the database: its writes are audited with the actor `cli`. The first owner is made here.
 */
import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import { group, integerOption, table, UsageError, withDb, type Act } from "./shared.ts";

/** Where the password comes from: `--password-file`, `--password-stdin` or `--password-env` (never an argument). */
interface PasswordSources {
  passwordFile?: string;
  passwordStdin?: boolean;
  passwordEnv?: string;
}

/**
 * Reads the password from the one source given (trailing line breaks dropped).
 * @returns the password, or undefined when no source was given (a token-only operator)
 * @throws UsageError for two sources or an unset variable; Error when the file cannot be read
 */
async function readPassword(values: PasswordSources): Promise<string | undefined> {
  const given = (["passwordFile", "passwordStdin", "passwordEnv"] as const).filter((k) => values[k] !== undefined);
  if (given.length > 1) throw new UsageError("give the password once: --password-file, --password-stdin or --password-env");
  let password: string;
  if (values.passwordFile !== undefined) {
    try {
      password = await readFile(values.passwordFile, "utf8");
    } catch (error) {
      throw new Error(`cannot read --password-file ${values.passwordFile}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  } else if (values.passwordStdin) {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    password = Buffer.concat(chunks).toString("utf8");
  } else if (values.passwordEnv !== undefined) {
    const value = process.env[values.passwordEnv];
    if (value === undefined) throw new UsageError(`--password-env ${values.passwordEnv}: the variable is not set`);
    password = value;
  } else return undefined;
  return password.replace(/[\r\n]+$/, "");
}

/** Registers `operators` and `audit` on the program. */
export function registerOperatorCommands(program: Command, act: Act): void {
  const operators = group(program, "operators", "people who run the service: console sign-in, roles, API tokens");
  act(
    operators
      .command("create")
      .description("create an operator (the first owner is made here)")
      .option("--email <EMAIL>", "sign-in email (required)")
      .option("--role <ROLE>", "owner, finance, support or viewer (required)")
      .option("--password-file <FILE>", "read the password (12-256 characters) from FILE")
      .option("--password-stdin", "read the password from stdin")
      .option("--password-env <NAME>", "read the password from the environment variable NAME")
      .option("--json", "print {id, email, role, status} as JSON"),
    async function () {
      const values = this.opts<PasswordSources & { email?: string; role?: string; json?: boolean }>();
      if (!values.email || !values.role) throw new UsageError("operators create needs --email and --role");
      const password = await readPassword(values);
      await withDb(async (db) => {
        const { createOperator } = await import("../../src/auth/operators/store.ts");
        const { CLI_ACTOR } = await import("../../src/audit/log.ts");
        const operator = await createOperator(db, CLI_ACTOR, { email: values.email!, role: values.role!, password });
        const shown = { id: operator.id, email: operator.email, role: operator.role, status: operator.status };
        console.log(values.json ? JSON.stringify(shown) : `${operator.id} ${operator.email} (${operator.role})${password ? "" : ": no password, tokens only"}`);
      });
    },
  );
  act(operators.command("list").description("list operators: id, email, role, status, created").option("--json", "print a JSON array"), async function () {
    const values = this.opts<{ json?: boolean }>();
    await withDb(async (db) => {
      const { listOperators } = await import("../../src/auth/operators/store.ts");
      const all = await listOperators(db);
      if (values.json) console.log(JSON.stringify(all.map((o) => ({ id: o.id, email: o.email, role: o.role, status: o.status, created_at: o.createdAt }))));
      else console.log(table([["ID", "EMAIL", "ROLE", "STATUS", "CREATED"], ...all.map((o) => [o.id, o.email, o.role, o.status, o.createdAt])]));
    });
  });
  for (const action of ["disable", "enable"] as const) {
    act(
      operators
        .command(action)
        .description(action === "disable" ? "disable an operator: its sessions end, its tokens are refused" : "enable an operator again")
        .argument("<OPERATOR>", "operator id or email"),
      async (id) => {
        await withDb(async (db) => {
          const { setOperatorStatus } = await import("../../src/auth/operators/store.ts");
          const { CLI_ACTOR } = await import("../../src/audit/log.ts");
          const operator = await setOperatorStatus(db, CLI_ACTOR, id!, action === "disable" ? "disabled" : "active");
          console.log(`${operator.id} ${operator.email} ${action}d`);
        });
      },
    );
  }
  const token = group(operators, "token", "operator API tokens for automation");
  act(
    token
      .command("create")
      .description("create an API token for an operator (shown once; Authorization: Bearer syop_…)")
      .argument("<OPERATOR>", "operator id or email")
      .option("--name <NAME>", "what the token is for (required)")
      .option("--json", "print {id, operator_id, name, token} as JSON"),
    async function (id) {
      const values = this.opts<{ name?: string; json?: boolean }>();
      if (!values.name) throw new UsageError("operators token create needs --name");
      await withDb(async (db) => {
        const { createOperatorToken } = await import("../../src/auth/operators/store.ts");
        const { CLI_ACTOR } = await import("../../src/audit/log.ts");
        const created = await createOperatorToken(db, CLI_ACTOR, id!, values.name!);
        if (values.json) console.log(JSON.stringify({ id: created.id, operator_id: created.operatorId, name: created.name, token: created.token }));
        else console.log(`token id: ${created.id}\ntoken:    ${created.token}   (shown once)`);
      });
    },
  );
  act(
    token.command("revoke").description("revoke an operator API token: refused from the next request").argument("<TOKEN_ID>", "the token's id (opt_…)"),
    async (id) => {
      await withDb(async (db) => {
        const { revokeOperatorToken } = await import("../../src/auth/operators/store.ts");
        const { CLI_ACTOR } = await import("../../src/audit/log.ts");
        await revokeOperatorToken(db, CLI_ACTOR, id!);
        console.log(`${id} revoked`);
      });
    },
  );

  const audit = group(program, "audit", "the audit log of admin writes");
  act(
    audit
      .command("list")
      .description("list audit rows, newest first")
      .option("--operator <OPERATOR_ID>", "only this operator's writes")
      .option("--actor <ACTOR>", "only this actor's writes: an email, break-glass or cli")
      .option("--object-type <TYPE>", "only writes of this kind of object (api_key, customer, channel, …)")
      .option("--object <ID>", "only writes of this object")
      .option("--since <TIME>", "only writes at or after this ISO 8601 time")
      .option("--until <TIME>", "only writes before this ISO 8601 time")
      .option("--limit <N>", "at most N rows (1-1000)", "100")
      .option("--json", "print a JSON array of {id, at, operator_id, actor, role, action, object_type, object_id, request_id, before, after, ledger_entry_id}"),
    async function () {
      const values = this.opts<{
        operator?: string;
        actor?: string;
        objectType?: string;
        object?: string;
        since?: string;
        until?: string;
        limit: string;
        json?: boolean;
      }>();
      const limit = integerOption(values.limit, "limit", { min: 1, max: 1000 })!;
      await withDb(async (db) => {
        const { listAudit } = await import("../../src/audit/log.ts");
        const rows = [];
        let after: string | null = null;
        while (rows.length < limit) {
          const page = await listAudit(
            db,
            {
              operatorId: values.operator,
              actor: values.actor,
              objectType: values.objectType,
              objectId: values.object,
              since: values.since,
              until: values.until,
            },
            { first: Math.min(100, limit - rows.length), after },
          );
          rows.push(...page.items);
          if (!page.hasNextPage) break;
          after = page.cursors.at(-1)!;
        }
        if (values.json) {
          const parse = (text: string | null) => (text == null ? null : JSON.parse(text));
          console.log(
            JSON.stringify(
              rows.map((r) => ({
                id: r.id,
                at: r.at,
                operator_id: r.operatorId,
                actor: r.actor,
                role: r.role,
                action: r.action,
                object_type: r.objectType,
                object_id: r.objectId,
                request_id: r.requestId,
                before: parse(r.before),
                after: parse(r.after),
                ledger_entry_id: r.ledgerEntryId,
              })),
            ),
          );
        } else
          console.log(
            table([
              ["ID", "AT", "ACTOR", "ACTION", "OBJECT"],
              ...rows.map((r) => [String(r.id), r.at, r.actor, r.action, `${r.objectType} ${r.objectId ?? ""}`]),
            ]),
          );
      });
    },
  );
}
