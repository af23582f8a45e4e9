/** `switchyard keys …`: create, list, show, disable, enable, top up (docs/architecture.md §2). */
import type { Knex } from "knex";
import { Option, type Command } from "commander";
import { formatYuan } from "../../src/money.ts";
import type { KeyListing } from "../../src/auth/keys.ts";
import { isAppError } from "../../src/errors.ts";
import { group, integerOption, list, table, UsageError, withDb, yuanOption, type Act } from "./shared.ts";

/** A key as `keys list --json` and `keys show --json` print it (balance in yuan, as every CLI amount). */
function keyJson(k: KeyListing, detailed: boolean) {
  const base = { id: k.id, name: k.name, account_id: k.accountId, status: k.status, scopes: k.scopes, balance: formatYuan(k.balance), created_at: k.createdAt };
  if (!detailed) return base;
  return { ...base, allow_ips: k.allowIps, rate_limit: k.rateLimit, callback_url: k.callbackUrl, require_signature: k.requireSignature };
}

/** Registers `keys` and its subcommands on the program. */
export function registerKeyCommands(program: Command, act: Act): void {
  const keys = group(program, "keys", "API keys: create, list, show, disable, enable, top up");
  act(
    keys
      .command("create")
      .description("create a key (and an account unless --account); the key is shown once")
      .option("--name <N>", "name of the key (required)")
      .option("--account <ACCOUNT_ID>", "an existing account; default: a new one")
      .option("--balance <YUAN>", "opening balance of a new account's ledger")
      .option("--scopes <a,b>", 'scopes, comma-separated (README "Scopes" lists them and what each operation needs); default: every scope')
      .option("--allow-ip <CIDR,...>", "source addresses or CIDR ranges allowed; default: any")
      .option("--rate-limit <N>", "requests per second")
      .option("--callback-url <URL>", "where task and order callbacks go")
      .option("--require-signature", "every request must carry X-Service-Signature")
      .option("--json", "print {id, key, account_id, webhook_secret} as JSON"),
    async function () {
      const values = this.opts<{
        name?: string;
        account?: string;
        balance?: string;
        scopes?: string;
        allowIp?: string;
        rateLimit?: string;
        callbackUrl?: string;
        requireSignature?: boolean;
        json?: boolean;
      }>();
      if (!values.name) throw new UsageError("keys create needs --name");
      // The upper bound is the domain's (createKey): one place for it.
      const rateLimit = integerOption(values.rateLimit, "rate-limit", { min: 1, max: Number.MAX_SAFE_INTEGER }, "--rate-limit must be a positive integer");
      const balance = yuanOption(values.balance, "balance");
      await withDb(async (db) => {
        const { createKeyAudited } = await import("../../src/auth/keys.ts");
        const { CLI_ACTOR } = await import("../../src/audit/log.ts");
        // With its audit row (and the opening balance's ledger entry) in one transaction.
        const { created } = await createKeyAudited(db, CLI_ACTOR, {
          name: values.name!,
          accountId: values.account,
          balance,
          scopes: list(values.scopes),
          allowIps: list(values.allowIp),
          rateLimit,
          callbackUrl: values.callbackUrl,
          requireSignature: values.requireSignature,
        });
        if (values.json) console.log(JSON.stringify(created));
        else
          console.log(
            `key id:      ${created.id}\naccount id:  ${created.account_id}\nAPI key:     ${created.key}   (shown once)\nwebhook secret: ${created.webhook_secret}`,
          );
      });
    },
  );
  act(
    keys
      .command("list")
      .description("list keys, newest first: id, name, account, status, balance, scopes, created")
      .option("--account <ACCOUNT_ID>", "only this account's keys")
      .addOption(new Option("--status <STATUS>", "only keys in this state").choices(["active", "disabled"]))
      .option("--limit <N>", "at most N keys (1-1000)", "100")
      .option("--after <CURSOR>", "the page after this cursor (printed on stderr when more keys match)")
      .option("--json", "print a JSON array of {id, name, account_id, status, scopes, balance, created_at}"),
    async function () {
      const values = this.opts<{ account?: string; status?: "active" | "disabled"; limit: string; after?: string; json?: boolean }>();
      const limit = integerOption(values.limit, "limit", { min: 1, max: 1000 })!;
      await withDb(async (db) => {
        const { listKeys } = await import("../../src/auth/keys.ts");
        const { ALL_SCOPES } = await import("../../src/auth/scopes.ts");
        const page = await listKeys(db, { accountId: values.account, status: values.status }, { first: limit, after: values.after }).catch((error) => {
          // A cursor this command did not print is bad usage, as a bad --limit is.
          if (isAppError(error) && error.details?.field === "cursor") throw new UsageError("--after must be a cursor printed by keys list");
          throw error;
        });
        if (values.json) console.log(JSON.stringify(page.items.map((k) => keyJson(k, false))));
        else if (page.items.length === 0) console.log("no keys");
        else {
          const scopes = (k: KeyListing) => (ALL_SCOPES.every((s) => k.scopes.includes(s)) ? "all" : k.scopes.join(","));
          console.log(
            table([
              ["ID", "NAME", "ACCOUNT", "STATUS", "BALANCE", "CREATED", "SCOPES"],
              ...page.items.map((k) => [k.id, k.name, k.accountId, k.status, formatYuan(k.balance), k.createdAt, scopes(k)]),
            ]),
          );
        }
        if (page.hasNextPage) process.stderr.write(`showing ${page.items.length} of ${page.totalCount} keys; next page: --after ${page.cursors.at(-1)}\n`);
      });
    },
  );
  act(
    keys
      .command("show")
      .description("show one key: its settings and its account's balance (never the key itself)")
      .argument("<ID>", "key id (key_...)")
      .option("--json", "print it as JSON"),
    async function (id) {
      const { json } = this.opts<{ json?: boolean }>();
      await withDb(async (db) => {
        const { getKeyListing } = await import("../../src/auth/keys.ts");
        const { AppError } = await import("../../src/errors.ts");
        const key = await getKeyListing(db, id!);
        if (!key) throw new AppError("not_found", "API key not found");
        if (json) return console.log(JSON.stringify(keyJson(key, true)));
        console.log(
          [
            `key id:          ${key.id}`,
            `name:            ${key.name}`,
            `account id:      ${key.accountId}`,
            `status:          ${key.status}`,
            `balance:         ${formatYuan(key.balance)} CNY`,
            `scopes:          ${key.scopes.join(", ")}`,
            `allowed IPs:     ${key.allowIps?.join(", ") ?? "any"}`,
            `rate limit:      ${key.rateLimit === null ? "none" : `${key.rateLimit} per second`}`,
            `callback URL:    ${key.callbackUrl ?? "none"}`,
            `signed requests: ${key.requireSignature ? "required" : "not required"}`,
            `created:         ${key.createdAt}`,
          ].join("\n"),
        );
      });
    },
  );
  for (const action of ["disable", "enable"] as const) {
    act(
      keys
        .command(action)
        .description(action === "disable" ? "disable a key: its requests get 403 API key is disabled" : "enable a disabled key")
        .argument("<ID>", "key id (key_...)"),
      async (id) => {
        await withDb(async (db) => {
          const { setKeyStatus } = await import("../../src/auth/keys.ts");
          const { audited, CLI_ACTOR } = await import("../../src/audit/log.ts");
          const status = action === "disable" ? "disabled" : "active";
          await audited(db, CLI_ACTOR, { action: `keys.${action}`, objectType: "api_key", objectId: id!, after: () => ({ status }) }, (trx: Knex.Transaction) =>
            setKeyStatus(trx, id!, status),
          );
          console.log(`${id} ${action}d`);
        });
      },
    );
  }
  act(
    keys
      .command("topup")
      .description("top up the account of a key (a top-up ledger entry)")
      .argument("<ID>", "key id (key_...)")
      .option("--amount <YUAN>", "amount in yuan (required)")
      .option("--json", "print {id, balance} as JSON"),
    async function (id) {
      const values = this.opts<{ amount?: string; json?: boolean }>();
      const amount = yuanOption(values.amount, "amount");
      if (amount === undefined || amount <= 0) throw new UsageError("keys topup needs a key id and a positive --amount");
      await withDb(async (db) => {
        const { topUpKey } = await import("../../src/auth/keys.ts");
        const { audited, CLI_ACTOR } = await import("../../src/audit/log.ts");
        const { balanceAfter: balance } = await audited(
          db,
          CLI_ACTOR,
          { action: "keys.topup", objectType: "api_key", objectId: id!, ledgerEntryOf: (e: { id: number | string }) => Number(e.id) },
          (trx: Knex.Transaction) => topUpKey(trx, id!, amount),
        );
        console.log(values.json ? JSON.stringify({ id, balance: formatYuan(balance) }) : `${id} balance ${formatYuan(balance)} CNY`);
      });
    },
  );
}
