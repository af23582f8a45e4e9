/**
 * `switchyard` commands (DESIGN §2): start, migrate, compose, keys, customers, catalog, webhooks, verify.
 * Exit codes: 0 success, 1 failure (for `verify`: a discrepancy), 2 bad usage.
 */
import { parseArgs } from "node:util";
import { ConfigError, loadConfig, type Config } from "../src/config.ts";
import { migrate, openDb, type Db } from "../src/db/index.ts";
import { ALL_SCOPES, createKey, setKeyStatus, topUpKey } from "../src/auth/keys.ts";
import { verifyLedger } from "../src/ledger/index.ts";
import { formatYuan, parseYuan } from "../src/money.ts";
import { isAppError } from "../src/errors.ts";
import type { Role, Stack } from "./stack.ts";
import type { ProductRecord, VendorRecord } from "../src/cloud/catalog.ts";
import type { Page } from "../src/pagination.ts";

/** Wraps `text` into lines of at most `width` characters, each starting with `indent`. */
function wrap(text: string, indent: string, width: number): string {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line && indent.length + line.length + 1 + word.length > width) {
      lines.push(indent + line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  return [...lines, indent + line].join("\n");
}

const USAGE = `Usage: switchyard <command>
  start [ROLES]                     every role in one process, or some: router, generation, cloud
                                    (comma-separated, e.g. generation,cloud)
  migrate                           bring the database schema up to date
  compose                           write schema/supergraph.graphql
  keys create --name N [--account ACCOUNT_ID] [--balance YUAN] [--scopes a,b]
              [--allow-ip CIDR,...] [--rate-limit N] [--callback-url URL]
              [--require-signature] [--json]
${wrap(`--scopes (default all): ${ALL_SCOPES.join(", ")}; README "Scopes" says what each operation needs`, "              ", 96)}
  keys disable ID | keys enable ID | keys topup ID --amount YUAN
  customers topup CUSTOMER_ID --account ACCOUNT_ID --amount YUAN
  customers credit CUSTOMER_ID --account ACCOUNT_ID --limit YUAN
  catalog vendors [--json]          list vendors
  catalog products [--category C] [--vendor ID] [--status S] [--json]
  catalog vendor upsert --name N [--id ID] [--status active|inactive] [--json]
  catalog product upsert --vendor ID --category C --name N [--id ID]
              [--status available|sold_out|offline] [--stock N|unlimited]
              [--cycle NAME=YUAN ...] [--cycle NAME:MONTHS=YUAN ...]
              [--required FIELD,...] [--description TEXT] [--json]
              (updating an existing --id, omitted options keep their values;
              NAME=YUAN needs a name that implies its months: monthly, quarterly, yearly...)
  webhooks resend DELIVERY_ID       send a callback delivery again
  verify                            check balances, task and order invariants (exit 1 on a discrepancy)`;

class UsageError extends Error {}

/** `parseArgs` whose complaints (unknown option, missing value) are usage errors (exit 2). */
function parseOptions<T extends Parameters<typeof parseArgs>[0]>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    if (typeof (error as { code?: unknown }).code === "string" && (error as { code: string }).code.startsWith("ERR_PARSE_ARGS")) {
      throw new UsageError((error as Error).message);
    }
    throw error;
  }
}

async function withDb<T>(config: Config, work: (db: Db) => Promise<T>): Promise<T> {
  const db = openDb(config);
  try {
    await migrate(db);
    return await work(db);
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

async function keys(config: Config, args: string[]): Promise<void> {
  const [action, ...rest] = args;
  const { values, positionals } = parseOptions({
    args: rest,
    allowPositionals: true,
    options: {
      name: { type: "string" },
      account: { type: "string" },
      balance: { type: "string" },
      scopes: { type: "string" },
      "allow-ip": { type: "string" },
      "rate-limit": { type: "string" },
      "callback-url": { type: "string" },
      "require-signature": { type: "boolean" },
      json: { type: "boolean" },
      amount: { type: "string" },
    },
  });
  const list = (v?: string) => (v ? v.split(",").map((s) => s.trim()).filter(Boolean) : undefined);
  await withDb(config, async (db) => {
    switch (action) {
      case "create": {
        if (!values.name) throw new UsageError("keys create needs --name");
        const rateLimit = values["rate-limit"] === undefined ? undefined : Number(values["rate-limit"]);
        if (rateLimit !== undefined && (!Number.isInteger(rateLimit) || rateLimit < 1)) throw new UsageError("--rate-limit must be a positive integer");
        const created = await createKey(db, {
          name: values.name,
          accountId: values.account,
          balance: yuanOption(values.balance, "balance"),
          scopes: list(values.scopes),
          allowIps: list(values["allow-ip"]),
          rateLimit,
          callbackUrl: values["callback-url"],
          requireSignature: values["require-signature"],
        });
        if (values.json) console.log(JSON.stringify(created));
        else console.log(`key id:      ${created.id}\naccount id:  ${created.account_id}\nAPI key:     ${created.key}   (shown once)\nwebhook secret: ${created.webhook_secret}`);
        return;
      }
      case "disable":
      case "enable": {
        const id = positionals[0];
        if (!id) throw new UsageError(`keys ${action} needs a key id`);
        await setKeyStatus(db, id, action === "disable" ? "disabled" : "active");
        console.log(`${id} ${action}d`);
        return;
      }
      case "topup": {
        const id = positionals[0];
        const amount = yuanOption(values.amount, "amount");
        if (!id || amount === undefined || amount <= 0) throw new UsageError("keys topup needs a key id and a positive --amount");
        const balance = await topUpKey(db, id, amount);
        console.log(values.json ? JSON.stringify({ id, balance: formatYuan(balance) }) : `${id} balance ${formatYuan(balance)} CNY`);
        return;
      }
      default:
        throw new UsageError(`unknown keys command: ${action ?? "(none)"}`);
    }
  });
}

async function customers(config: Config, args: string[]): Promise<void> {
  const [action, ...rest] = args;
  const { values, positionals } = parseOptions({
    args: rest,
    allowPositionals: true,
    options: { account: { type: "string" }, amount: { type: "string" }, limit: { type: "string" }, json: { type: "boolean" } },
  });
  const customerId = positionals[0];
  if (!customerId || !values.account) throw new UsageError(`customers ${action ?? ""} needs CUSTOMER_ID and --account`);
  const { topUpCustomer, setCreditLine, getCustomerBalance } = await import("../src/cloud/customers.ts");
  await withDb(config, async (db) => {
    if (action === "topup") {
      const amount = yuanOption(values.amount, "amount");
      if (amount === undefined || amount <= 0) throw new UsageError("customers topup needs a positive --amount");
      await topUpCustomer(db, { accountId: values.account!, customerId, amount, reason: "top-up (CLI)" });
    } else if (action === "credit") {
      const limit = yuanOption(values.limit, "limit");
      if (limit === undefined || limit < 0) throw new UsageError("customers credit needs --limit of zero or more");
      await setCreditLine(db, values.account!, customerId, limit);
    } else {
      throw new UsageError(`unknown customers command: ${action ?? "(none)"}`);
    }
    const balance = await getCustomerBalance(db, values.account!, customerId);
    const shown = { customer_id: customerId, available: formatYuan(balance.available), frozen: formatYuan(balance.frozen), credit_line: formatYuan(balance.creditLine), currency: "CNY" };
    console.log(values.json ? JSON.stringify(shown) : `${customerId}: available ${shown.available}, frozen ${shown.frozen}, credit line ${shown.credit_line} CNY`);
  });
}

/** A vendor as the CLI prints it with `--json` (the REST names of DESIGN §8). */
function vendorJson(v: VendorRecord) {
  return { vendor_id: v.id, name: v.name, status: v.status, created_at: v.createdAt };
}

/** A product as the CLI prints it with `--json` (the REST names of DESIGN §8; prices in yuan strings). */
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

async function catalog(config: Config, args: string[]): Promise<void> {
  const [noun, ...afterNoun] = args;
  const listing = noun === "vendors" || noun === "products";
  // `catalog vendors [options]` lists; `catalog vendor|product upsert [options]` writes.
  const [action, ...rest] = listing ? [undefined, ...afterNoun] : afterNoun;
  const { values, positionals } = parseOptions({
    args: rest,
    allowPositionals: true,
    options: {
      id: { type: "string" },
      name: { type: "string" },
      status: { type: "string" },
      vendor: { type: "string" },
      category: { type: "string" },
      description: { type: "string" },
      stock: { type: "string" },
      cycle: { type: "string", multiple: true },
      required: { type: "string" },
      json: { type: "boolean" },
    },
  });
  if (positionals.length) throw new UsageError(`unexpected argument: ${positionals[0]}`);
  if (!listing && ((noun !== "vendor" && noun !== "product") || action !== "upsert")) {
    throw new UsageError(`unknown catalog command: ${[noun, action].filter(Boolean).join(" ") || "(none)"}`);
  }
  const catalogModule = await import("../src/cloud/catalog.ts");
  await withDb(config, async (db) => {
    if (noun === "vendors" || noun === "products") {
      const all: unknown[] = [];
      let after: string | null = null;
      for (;;) {
        const page: Page<VendorRecord | ProductRecord> =
          noun === "vendors"
            ? await catalogModule.listVendors(db, { first: 100, after })
            : await catalogModule.listProducts(db, { category: values.category, vendorId: values.vendor, status: values.status }, { first: 100, after });
        all.push(...page.items);
        if (!page.hasNextPage) break;
        after = page.cursors.at(-1)!;
      }
      if (noun === "vendors") {
        const vendors = all as VendorRecord[];
        console.log(values.json ? JSON.stringify(vendors.map(vendorJson)) : vendors.map(vendorLine).join("\n") || "no vendors");
      } else {
        const products = all as ProductRecord[];
        console.log(values.json ? JSON.stringify(products.map(productJson)) : products.map(productLine).join("\n") || "no products");
      }
      return;
    }
    if (noun === "vendor") {
      if (!values.name) throw new UsageError("catalog vendor upsert needs --name");
      const [existing] = values.id ? await catalogModule.getVendorsByIds(db, [values.id]) : [null];
      const vendor = await catalogModule.upsertVendor(db, { id: values.id, name: values.name, status: values.status ?? existing?.status });
      console.log(values.json ? JSON.stringify(vendorJson(vendor)) : vendorLine(vendor));
      return;
    }
    if (!values.vendor || !values.category || !values.name) throw new UsageError("catalog product upsert needs --vendor, --category and --name");
    let stock: number | null | undefined;
    if (values.stock !== undefined) {
      if (values.stock === "unlimited") stock = null;
      else if (/^\d{1,15}$/.test(values.stock)) stock = Number(values.stock);
      else throw new UsageError("--stock must be a non-negative integer or unlimited");
    }
    const cycles = (values.cycle ?? []).map(cycleOption);
    const existing = values.id ? await catalogModule.getProduct(db, values.id) : null;
    if (!existing && cycles.length === 0) throw new UsageError("catalog product upsert of a new product needs at least one --cycle NAME=YUAN");
    const required = values.required === undefined ? undefined : values.required.split(",").map((f) => f.trim()).filter(Boolean);
    const product = await catalogModule.upsertProduct(db, {
      id: values.id,
      vendorId: values.vendor,
      category: values.category,
      name: values.name,
      description: values.description ?? existing?.description ?? null,
      status: values.status ?? existing?.status,
      billingCycles: cycles.length ? cycles : existing!.billingCycles,
      stock: stock !== undefined ? stock : (existing?.stock ?? null),
      requiredFields: required ?? existing?.requiredFields ?? [],
    });
    console.log(values.json ? JSON.stringify(productJson(product)) : productLine(product));
  });
}

async function webhooks(config: Config, args: string[]): Promise<void> {
  const [action, id] = args;
  if (action !== "resend" || !id || !/^\d+$/.test(id)) throw new UsageError("webhooks resend needs a numeric DELIVERY_ID");
  const { resendDelivery } = await import("../src/events/webhooks.ts");
  await withDb(config, async (db) => {
    await resendDelivery(db, Number(id));
    console.log(`delivery ${id} queued to be sent again`);
  });
}

async function start(config: Config, roleArg: string | undefined): Promise<void> {
  const roles = roleArg ? (roleArg.split(",").map((r) => r.trim()) as Role[]) : undefined;
  const unknown = roles?.filter((r) => !["router", "generation", "cloud"].includes(r));
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
  const { startStack } = await import("./stack.ts");
  const started = await startStack(config, roles);
  stack = started;
  if (signalledWhileStarting) {
    const signal = signalledWhileStarting;
    signalledWhileStarting = undefined;
    return shutdown(signal);
  }
  // A real process also reports its CPU, memory, event-loop lag and GC on /metrics.
  if (started.metrics) (await import("../src/observability/metrics.ts")).collectProcessMetrics(started.metrics);
  let demoKey: string | undefined;
  if (started.db) {
    const [{ n }] = await started.db("api_keys").count({ n: "*" });
    if (Number(n) === 0) demoKey = (await createKey(started.db, { name: "demo", balance: parseYuan("100") })).key;
  }
  const lines = [""];
  if (started.url) lines.push(`Switchyard router:   ${started.url}  (GraphQL ${started.url}/graphql, REST ${started.url}/api/v1, health ${started.url}/health)`);
  if (started.url) lines.push(`Web pages:           ${started.url}/test (try every model)  ${started.url}/client (balance and tasks)`);
  if (started.generationUrl) lines.push(`Generation subgraph: ${started.generationUrl}`);
  if (started.cloudUrl) lines.push(`Cloud subgraph:      ${started.cloudUrl}`);
  if (demoKey) lines.push(`Demo API key (100.00 CNY, shown once): ${demoKey}`);
  if (closing) return; // a signal came while counting keys: shutdown() is already under way
  process.stdout.write(`${lines.join("\n")}\n\n`);
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

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const config = loadConfig();
  switch (command) {
    case "start":
      await start(config, rest[0]);
      return -1; // keep running
    case "migrate": {
      const db = openDb(config);
      try {
        const names = await migrate(db);
        console.log(names.length ? `applied ${names.join(", ")}` : "database is up to date");
      } finally {
        await db.destroy();
      }
      return 0;
    }
    case "compose": {
      const { writeSupergraph } = await import("../router/compose.ts");
      console.log(`wrote ${writeSupergraph()}`);
      return 0;
    }
    case "keys":
      await keys(config, rest);
      return 0;
    case "customers":
      await customers(config, rest);
      return 0;
    case "catalog":
      await catalog(config, rest);
      return 0;
    case "webhooks":
      await webhooks(config, rest);
      return 0;
    case "verify": {
      const problems = await withDb(config, (db) => verifyLedger(db));
      for (const p of problems) console.log(`${p.kind}\t${p.subject}\t${p.detail}`);
      console.log(problems.length ? `${problems.length} discrepancies` : "ledger, tasks and orders verified: no discrepancies");
      return problems.length ? 1 : 0;
    }
    default:
      console.error(USAGE);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (error) => {
    if (error instanceof UsageError) {
      console.error(`switchyard: ${error.message}\n\n${USAGE}`);
      process.exit(2);
    }
    console.error(`switchyard: ${isAppError(error) || error instanceof ConfigError ? error.message : (error as Error).stack ?? error}`);
    process.exit(1);
  },
);
