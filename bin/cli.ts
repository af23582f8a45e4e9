/**
 * `switchyard` commands (docs/architecture.md §2): start, migrate, compose, keys, customers, catalog, webhooks,
 * verify, on commander (docs/adr/0008-cli.md): every command and subcommand answers `--help`.
 * Exit codes: 0 success (and `--help`, `--version`), 1 failure (for `verify`: a discrepancy), 2 bad usage.
 * Every command that opens the database says which one on stderr (`database: sqlite /…/switchyard.db`).
 */
import fs from "node:fs";
import { Command, CommanderError, Option } from "commander";
import { ConfigError, loadConfig, type Config } from "../src/config.ts";
import { formatYuan, parseYuan } from "../src/money.ts";
import { isAppError } from "../src/errors.ts";
import type { Db } from "../src/db/index.ts";
import type { KeyListing } from "../src/auth/keys.ts";
import type { Stack } from "./stack.ts";
import { ALL_ROLES, type Role } from "./roles.ts";
import type { ProductRecord, VendorRecord } from "../src/cloud/catalog.ts";
import type { Page } from "../src/pagination.ts";

/** A command used wrongly: its message, then the command's help, on stderr; exit 2. */
class UsageError extends Error {}

/** Exit code of a usage error (commander's and ours). */
const USAGE_EXIT = 2;

const VERSION: string = JSON.parse(fs.readFileSync(new URL("../package.json", import.meta.url), "utf8")).version;

/** Opens the database (and says which one on stderr), brings its schema up to date, runs `work`, closes it. */
async function withDb<T>(work: (db: Db, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const { databaseDescription, migrate, openDb } = await import("../src/db/index.ts");
  const db = openDb(config);
  try {
    await migrate(db);
    process.stderr.write(`database: ${databaseDescription(db)}\n`);
    return await work(db, config);
  } finally {
    await db.destroy();
  }
}

function yuanOption(value: string | undefined, name: string) {
  if (value === undefined) return undefined;
  try {
    return parseYuan(value);
  } catch {
    throw new UsageError(`--${name} must be an amount in yuan with at most three decimals`);
  }
}

const list = (v?: string) => (v ? v.split(",").map((s) => s.trim()).filter(Boolean) : undefined);

/** A key as `keys list --json` and `keys show --json` print it (balance in yuan, as every CLI amount). */
function keyJson(k: KeyListing, detailed: boolean) {
  const base = { id: k.id, name: k.name, account_id: k.accountId, status: k.status, scopes: k.scopes, balance: formatYuan(k.balance), created_at: k.createdAt };
  if (!detailed) return base;
  return { ...base, allow_ips: k.allowIps, rate_limit: k.rateLimit, callback_url: k.callbackUrl, require_signature: k.requireSignature };
}

/** Columns padded to their widest cell; the last column is not padded. */
function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ")).join("\n");
}

/** Builds the program: every command, its options and help. Nothing runs until it is parsed. */
function buildProgram(result: { code: number }): Command {
  const program = new Command("switchyard")
    .description("Switchyard: the generation service and the cloud open API as one GraphQL federation, with REST shims.")
    .version(VERSION, "-V, --version", "print the version")
    .helpOption("-h, --help", "show help for a command")
    .configureOutput({ outputError: (text, write) => write(`switchyard: ${text.replace(/^error: /, "")}`) })
    .showHelpAfterError()
    .exitOverride()
    .addHelpText(
      "after",
      "\nEvery command that opens the database prints which one on stderr (database: sqlite PATH, or postgres HOST:PORT/DB).\n" +
        "Settings come from environment variables (README \"Configuration\"). Exit codes: 0 done, 1 failed, 2 bad usage.",
    );
  reportUnknownCommands(program);

  /** Runs a command's handler; a {@link UsageError} becomes the command's usage error (exit 2). */
  const act = (command: Command, handler: (this: Command, ...args: string[]) => Promise<number | void>) =>
    command.action(async function (this: Command) {
      try {
        const code = await handler.apply(this, this.processedArgs as string[]);
        if (typeof code === "number") result.code = code;
      } catch (error) {
        if (error instanceof UsageError) this.error(error.message, { exitCode: USAGE_EXIT, code: "switchyard.usage" });
        throw error;
      }
    });

  act(
    program
      .command("start")
      .description("start every role in one process (the default), or some for scale-out")
      .argument("[ROLES]", "comma-separated roles: router, generation, cloud (e.g. generation,cloud)"),
    async (roles) => {
      await start(loadConfig(), roles);
      return -1; // keep running
    },
  );

  act(program.command("migrate").description("bring the database schema up to date (start does it too)"), async () => {
    // Not through withDb: this reports the migrations it applies.
    const config = loadConfig();
    const { databaseDescription, migrate, openDb } = await import("../src/db/index.ts");
    const db = openDb(config);
    try {
      const names = await migrate(db);
      process.stderr.write(`database: ${databaseDescription(db)}\n`);
      console.log(names.length ? `applied ${names.join(", ")}` : "database is up to date");
    } finally {
      await db.destroy();
    }
  });

  act(program.command("compose").description("write schema/supergraph.graphql from schema/*.graphql"), async () => {
    const { writeSupergraph } = await import("../router/compose.ts");
    console.log(`wrote ${writeSupergraph()}`);
  });

  // keys
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
      const values = this.opts<{ name?: string; account?: string; balance?: string; scopes?: string; allowIp?: string; rateLimit?: string; callbackUrl?: string; requireSignature?: boolean; json?: boolean }>();
      if (!values.name) throw new UsageError("keys create needs --name");
      const rateLimit = values.rateLimit === undefined ? undefined : Number(values.rateLimit);
      if (rateLimit !== undefined && (!Number.isInteger(rateLimit) || rateLimit < 1)) throw new UsageError("--rate-limit must be a positive integer");
      const balance = yuanOption(values.balance, "balance");
      await withDb(async (db) => {
        const { createKey } = await import("../src/auth/keys.ts");
        const created = await createKey(db, {
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
        else console.log(`key id:      ${created.id}\naccount id:  ${created.account_id}\nAPI key:     ${created.key}   (shown once)\nwebhook secret: ${created.webhook_secret}`);
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
      const limit = Number(values.limit);
      if (!/^\d+$/.test(values.limit) || limit < 1 || limit > 1000) throw new UsageError("--limit must be a whole number from 1 to 1000");
      await withDb(async (db) => {
        const { listKeys, ALL_SCOPES } = await import("../src/auth/keys.ts");
        const page = await listKeys(db, { accountId: values.account, status: values.status }, { first: limit, after: values.after });
        if (values.json) console.log(JSON.stringify(page.items.map((k) => keyJson(k, false))));
        else if (page.items.length === 0) console.log("no keys");
        else {
          const scopes = (k: KeyListing) => (ALL_SCOPES.every((s) => k.scopes.includes(s)) ? "all" : k.scopes.join(","));
          console.log(table([["ID", "NAME", "ACCOUNT", "STATUS", "BALANCE", "CREATED", "SCOPES"], ...page.items.map((k) => [k.id, k.name, k.accountId, k.status, formatYuan(k.balance), k.createdAt, scopes(k)])]));
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
        const { getKeyListing } = await import("../src/auth/keys.ts");
        const { AppError } = await import("../src/errors.ts");
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
          const { setKeyStatus } = await import("../src/auth/keys.ts");
          await setKeyStatus(db, id!, action === "disable" ? "disabled" : "active");
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
        const { topUpKey } = await import("../src/auth/keys.ts");
        const balance = await topUpKey(db, id!, amount);
        console.log(values.json ? JSON.stringify({ id, balance: formatYuan(balance) }) : `${id} balance ${formatYuan(balance)} CNY`);
      });
    },
  );

  // customers
  const customers = group(program, "customers", "cloud customers' wallets: top-ups and credit lines");
  for (const action of ["topup", "credit"] as const) {
    const command = customers
      .command(action)
      .description(action === "topup" ? "a top-up transaction on a cloud customer's wallet" : "set a cloud customer's credit line")
      .argument("<CUSTOMER_ID>", "the customer, inside the account")
      .option("--account <ACCOUNT_ID>", "the account the customer belongs to (required)");
    if (action === "topup") command.option("--amount <YUAN>", "amount in yuan (required)");
    else command.option("--limit <YUAN>", "credit line in yuan, zero or more (required)");
    command.option("--json", "print {customer_id, available, frozen, credit_line, currency} as JSON");
    act(command, async function (customerId) {
      const values = this.opts<{ account?: string; amount?: string; limit?: string; json?: boolean }>();
      if (!values.account) throw new UsageError(`customers ${action} needs CUSTOMER_ID and --account`);
      const amount = action === "topup" ? yuanOption(values.amount, "amount") : undefined;
      if (action === "topup" && (amount === undefined || amount <= 0)) throw new UsageError("customers topup needs a positive --amount");
      const limit = action === "credit" ? yuanOption(values.limit, "limit") : undefined;
      if (action === "credit" && (limit === undefined || limit < 0)) throw new UsageError("customers credit needs --limit of zero or more");
      const accountId = values.account;
      await withDb(async (db) => {
        const { topUpCustomer, setCreditLine, getCustomerBalance } = await import("../src/cloud/customers.ts");
        if (action === "topup") await topUpCustomer(db, { accountId, customerId: customerId!, amount: amount!, reason: "top-up (CLI)" });
        else await setCreditLine(db, accountId, customerId!, limit!);
        const balance = await getCustomerBalance(db, accountId, customerId!);
        const shown = { customer_id: customerId, available: formatYuan(balance.available), frozen: formatYuan(balance.frozen), credit_line: formatYuan(balance.creditLine), currency: "CNY" };
        console.log(values.json ? JSON.stringify(shown) : `${customerId}: available ${shown.available}, frozen ${shown.frozen}, credit line ${shown.credit_line} CNY`);
      });
    });
  }

  // catalog
  const catalog = group(program, "catalog", "the cloud catalog: vendors and products");
  act(catalog.command("vendors").description("list vendors").option("--json", "print a JSON array"), async function () {
    const { json } = this.opts<{ json?: boolean }>();
    await withDb(async (db) => {
      const { listVendors } = await import("../src/cloud/catalog.ts");
      const vendors = await allPages<VendorRecord>((after) => listVendors(db, { first: 100, after }));
      console.log(json ? JSON.stringify(vendors.map(vendorJson)) : vendors.map(vendorLine).join("\n") || "no vendors");
    });
  });
  act(
    catalog
      .command("products")
      .description("list products")
      .option("--category <C>", "only this category")
      .option("--vendor <ID>", "only this vendor's")
      .option("--status <S>", "only this sale status: available, sold_out, offline")
      .option("--json", "print a JSON array"),
    async function () {
      const values = this.opts<{ category?: string; vendor?: string; status?: string; json?: boolean }>();
      await withDb(async (db) => {
        const { listProducts } = await import("../src/cloud/catalog.ts");
        const products = await allPages<ProductRecord>((after) => listProducts(db, { category: values.category, vendorId: values.vendor, status: values.status }, { first: 100, after }));
        console.log(values.json ? JSON.stringify(products.map(productJson)) : products.map(productLine).join("\n") || "no products");
      });
    },
  );
  const vendor = group(catalog, "vendor", "write a vendor");
  act(
    vendor
      .command("upsert")
      .description("create a vendor, or update the one with --id")
      .option("--name <N>", "name (required)")
      .option("--id <ID>", "the vendor to update, or the id of a new one")
      .option("--status <STATUS>", "active or inactive")
      .option("--json", "print it as JSON"),
    async function () {
      const values = this.opts<{ name?: string; id?: string; status?: string; json?: boolean }>();
      if (!values.name) throw new UsageError("catalog vendor upsert needs --name");
      await withDb(async (db) => {
        const catalogModule = await import("../src/cloud/catalog.ts");
        const [existing] = values.id ? await catalogModule.getVendorsByIds(db, [values.id]) : [null];
        const written = await catalogModule.upsertVendor(db, { id: values.id, name: values.name!, status: values.status ?? existing?.status });
        console.log(values.json ? JSON.stringify(vendorJson(written)) : vendorLine(written));
      });
    },
  );
  const product = group(catalog, "product", "write a product");
  act(
    product
      .command("upsert")
      .description(
        "create a product, or update the one with --id (omitted options keep their values);\n" +
          "NAME=YUAN needs a cycle name that implies its months: monthly, quarterly, yearly...",
      )
      .option("--vendor <ID>", "its vendor (required)")
      .option("--category <C>", "its category (required)")
      .option("--name <N>", "name (required)")
      .option("--id <ID>", "the product to update, or the id of a new one")
      .option("--status <STATUS>", "available, sold_out or offline")
      .option("--stock <N|unlimited>", "units left to sell")
      .option("--cycle <NAME=YUAN|NAME:MONTHS=YUAN>", "a billing cycle and its price; repeat for several", (value: string, previous: string[] = []) => [...previous, value])
      .option("--required <FIELD,...>", "fields an order must fill in")
      .option("--description <TEXT>", "description")
      .option("--json", "print it as JSON"),
    async function () {
      const values = this.opts<{ vendor?: string; category?: string; name?: string; id?: string; status?: string; stock?: string; cycle?: string[]; required?: string; description?: string; json?: boolean }>();
      if (!values.vendor || !values.category || !values.name) throw new UsageError("catalog product upsert needs --vendor, --category and --name");
      let stock: number | null | undefined;
      if (values.stock !== undefined) {
        if (values.stock === "unlimited") stock = null;
        else if (/^\d{1,15}$/.test(values.stock)) stock = Number(values.stock);
        else throw new UsageError("--stock must be a non-negative integer or unlimited");
      }
      const cycles = (values.cycle ?? []).map(cycleOption);
      const required = values.required === undefined ? undefined : values.required.split(",").map((f) => f.trim()).filter(Boolean);
      await withDb(async (db) => {
        const catalogModule = await import("../src/cloud/catalog.ts");
        const existing = values.id ? await catalogModule.getProduct(db, values.id) : null;
        if (!existing && cycles.length === 0) throw new UsageError("catalog product upsert of a new product needs at least one --cycle NAME=YUAN");
        const written = await catalogModule.upsertProduct(db, {
          id: values.id,
          vendorId: values.vendor!,
          category: values.category!,
          name: values.name!,
          description: values.description ?? existing?.description ?? null,
          status: values.status ?? existing?.status,
          billingCycles: cycles.length ? cycles : existing!.billingCycles,
          stock: stock !== undefined ? stock : (existing?.stock ?? null),
          requiredFields: required ?? existing?.requiredFields ?? [],
        });
        console.log(values.json ? JSON.stringify(productJson(written)) : productLine(written));
      });
    },
  );

  // webhooks
  const webhooks = group(program, "webhooks", "callback deliveries");
  act(webhooks.command("resend").description("send a callback delivery again").argument("<DELIVERY_ID>", "numeric delivery id"), async (id) => {
    if (!/^\d+$/.test(id!)) throw new UsageError("webhooks resend needs a numeric DELIVERY_ID");
    await withDb(async (db) => {
      const { resendDelivery } = await import("../src/events/webhooks.ts");
      await resendDelivery(db, Number(id));
      console.log(`delivery ${id} queued to be sent again`);
    });
  });

  act(program.command("verify").description("check balances, running totals, task and order invariants (exit 1 on a discrepancy)"), async () => {
    const { verifyLedger } = await import("../src/ledger/index.ts");
    const problems = await withDb((db) => verifyLedger(db));
    for (const p of problems) console.log(`${p.kind}\t${p.subject}\t${p.detail}`);
    console.log(problems.length ? `${problems.length} discrepancies` : "ledger, running totals, tasks and orders verified: no discrepancies");
    return problems.length ? 1 : 0;
  });

  return program;
}

/** A command that only holds subcommands (`keys`, `catalog vendor`...). */
function group(parent: Command, name: string, description: string): Command {
  const command = parent.command(name).description(description).helpCommand(false);
  reportUnknownCommands(command);
  return command;
}

/** `switchyard X` or `switchyard keys X` for an X that is no command: "unknown command: X", the usage, exit 2. */
function reportUnknownCommands(command: Command): void {
  command.on("command:*", (operands: string[]) => {
    const path: string[] = [];
    for (let c: Command | null = command; c?.parent; c = c.parent) path.unshift(c.name());
    command.error(`unknown command: ${[...path, operands[0]].join(" ")}`, { exitCode: USAGE_EXIT, code: "commander.unknownCommand" });
  });
}

/** Every item of a paged list. */
async function allPages<T>(fetchPage: (after: string | null) => Promise<Page<T>>): Promise<T[]> {
  const all: T[] = [];
  let after: string | null = null;
  for (;;) {
    const page: Page<T> = await fetchPage(after);
    all.push(...page.items);
    if (!page.hasNextPage) return all;
    after = page.cursors.at(-1)!;
  }
}

/** A vendor as the CLI prints it with `--json` (the REST names of docs/architecture.md §8). */
function vendorJson(v: VendorRecord) {
  return { vendor_id: v.id, name: v.name, status: v.status, created_at: v.createdAt };
}

/** A product as the CLI prints it with `--json` (the REST names of docs/architecture.md §8; prices in yuan strings). */
function productJson(p: ProductRecord) {
  return {
    product_id: p.id,
    vendor_id: p.vendorId,
    category: p.category,
    name: p.name,
    description: p.description,
    status: p.status,
    billing_cycles: p.billingCycles.map((c) => ({ cycle: c.cycle, months: c.months, price: formatYuan(c.price) })),
    stock: p.stock,
    required_fields: p.requiredFields,
    created_at: p.createdAt,
    updated_at: p.updatedAt,
  };
}

function vendorLine(v: VendorRecord): string {
  return `${v.id}\t${v.status}\t${v.name}`;
}

function productLine(p: ProductRecord): string {
  const cycles = p.billingCycles.map((c) => `${c.cycle}(${c.months}m)=${formatYuan(c.price)}`).join(",");
  const required = p.requiredFields.length ? p.requiredFields.join(",") : "-";
  return `${p.id}\t${p.vendorId}\t${p.category}\t${p.status}\tstock=${p.stock ?? "unlimited"}\t${cycles}\trequired=${required}\t${p.name}`;
}

/** Parses `--cycle NAME=YUAN` or `--cycle NAME:MONTHS=YUAN`; months omitted are implied by the name in src. */
function cycleOption(text: string): { cycle: string; months: number | null; price: number } {
  const match = /^([^:=\s]+)(?::(\d{1,3}))?=(.+)$/.exec(text.trim());
  if (!match) throw new UsageError(`--cycle must be NAME=YUAN or NAME:MONTHS=YUAN, got ${JSON.stringify(text)}`);
  const [, cycle, months, price] = match;
  return { cycle: cycle!, months: months === undefined ? null : Number(months), price: yuanOption(price, "cycle")! };
}

async function start(config: Config, roleArg: string | undefined): Promise<void> {
  const roles = roleArg ? (roleArg.split(",").map((r) => r.trim()) as Role[]) : undefined;
  const unknown = roles?.filter((r) => !ALL_ROLES.includes(r));
  if (unknown?.length) throw new UsageError(`unknown role: ${unknown.join(", ")}`);
  // Graceful shutdown: stop accepting, drain requests in flight (SHUTDOWN_TIMEOUT_MS), close
  // WebSockets with 1001, stop the loops, then close the database; exit 0. Should closing hang,
  // the process exits 1 a little after the drain deadline; a second signal exits at once.
  // The signals are ours before anything starts: a SIGTERM arriving while the stack starts, or
  // just after the ready line is printed, shuts down once the start has finished (a library's
  // own listener, added meanwhile, would otherwise take it and leave the process running).
  let stack: Stack | undefined;
  let signalledWhileStarting: string | undefined;
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing || signalledWhileStarting) {
      stack?.logger.warn({ signal }, "second signal: exiting without waiting");
      process.exit(1);
    }
    if (!stack) return void (signalledWhileStarting = signal); // shut down once the start finishes (below)
    closing = true;
    stack.logger.info({ signal }, "shutting down");
    setTimeout(() => {
      stack?.logger.error("shutdown did not finish in time; exiting");
      process.exit(1);
    }, config.shutdownTimeoutMs + 15_000).unref();
    await stack.close();
    stack.logger.info("stopped");
    process.exit(0);
  };
  ownTerminationSignals((signal) => void shutdown(signal));
  // Loaded on demand: the gateway and servers are heavy, and key commands need none of them.
  const { startStack, createLogger } = await import("./stack.ts");
  // Log lines and the banner share one ordered stream on stdout, so they never interleave.
  const pino = (await import("pino")).default;
  const stdout = pino.destination({ dest: 1, sync: false });
  const logger = createLogger(config, stdout);
  const started = await startStack(config, roles, logger).catch(async (error) => {
    const { describeListenError } = await import("./ports.ts");
    throw describeListenError(error, config, roles ?? ALL_ROLES) ?? error;
  });
  stack = started;
  if (signalledWhileStarting) {
    const signal = signalledWhileStarting;
    signalledWhileStarting = undefined;
    return shutdown(signal);
  }
  // A real process also reports its CPU, memory, event-loop lag and GC on /metrics.
  if (started.metrics) (await import("../src/observability/metrics.ts")).collectProcessMetrics(started.metrics);
  let demoKey: { key: string; id: string } | undefined;
  if (started.db) {
    const { createKey } = await import("../src/auth/keys.ts");
    const { databaseDescription } = await import("../src/db/index.ts");
    process.stderr.write(`database: ${databaseDescription(started.db)}\n`);
    const [{ n }] = await started.db("api_keys").count({ n: "*" });
    if (Number(n) === 0) demoKey = await createKey(started.db, { name: "demo", balance: parseYuan("100") });
  }
  const lines = [""];
  if (started.url) lines.push(`Switchyard router:   ${started.url}  (GraphQL ${started.url}/graphql, REST ${started.url}/api/v1, health ${started.url}/health)`);
  if (started.url) lines.push(`Web pages:           ${started.url}/ (start here: links everything)  ${started.url}/test  ${started.url}/client  ${started.url}/docs (API reference)`);
  if (started.generationUrl) lines.push(`Generation subgraph: ${started.generationUrl}`);
  if (started.cloudUrl) lines.push(`Cloud subgraph:      ${started.cloudUrl}`);
  if (demoKey) lines.push(`Demo API key (100.00 CNY, shown once): ${demoKey.key} (id ${demoKey.id})`);
  if (closing) return; // a signal came while counting keys: shutdown() is already under way
  stdout.write(`${lines.join("\n")}\n\n`);
  started.logger.info({ event: "ready", url: started.url, generation_url: started.generationUrl, cloud_url: started.cloudUrl }, "ready");
}

/**
 * Makes `handler` the only listener of SIGTERM and SIGINT, now and later. Libraries that react to
 * those signals on their own — the gateway runtime disposes its subgraph executors, Apollo Server
 * stops itself — would cut the requests in flight before the graceful shutdown drains them.
 */
function ownTerminationSignals(handler: (signal: NodeJS.Signals) => void): void {
  const signals: NodeJS.Signals[] = ["SIGTERM", "SIGINT"];
  const ours = new Set<(...args: any[]) => void>();
  for (const signal of signals) for (const listener of process.listeners(signal)) process.off(signal, listener as (...args: any[]) => void);
  process.on("newListener", (event, listener) => {
    if (signals.includes(event as NodeJS.Signals) && !ours.has(listener)) queueMicrotask(() => process.off(event as NodeJS.Signals, listener));
  });
  for (const signal of signals) {
    const listener = () => handler(signal);
    ours.add(listener);
    process.on(signal, listener);
  }
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
