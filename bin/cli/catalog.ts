/** `switchyard catalog …`: list and write vendors and products (docs/architecture.md §2). */
import type { Knex } from "knex";
import type { Command } from "commander";
import { formatYuan } from "../../src/money.ts";
import type { ProductRecord, VendorRecord } from "../../src/cloud/catalog.ts";
import { allPages, group, integerOption, list, UsageError, withDb, yuanOption, type Act } from "./shared.ts";

/** Registers `catalog` and its subcommands on the program. */
export function registerCatalogCommands(program: Command, act: Act): void {
  const catalog = group(program, "catalog", "the cloud catalog: vendors and products");
  act(catalog.command("vendors").description("list vendors").option("--json", "print a JSON array"), async function () {
    const { json } = this.opts<{ json?: boolean }>();
    await withDb(async (db) => {
      const { listVendors } = await import("../../src/cloud/catalog.ts");
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
        const { listProducts } = await import("../../src/cloud/catalog.ts");
        const products = await allPages<ProductRecord>((after) =>
          listProducts(db, { category: values.category, vendorId: values.vendor, status: values.status }, { first: 100, after }),
        );
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
      .option("--id <ID>", "the vendor to update, or the id of a new one (starting with vnd_)")
      .option("--status <STATUS>", "active or inactive")
      .option("--json", "print it as JSON"),
    async function () {
      const values = this.opts<{ name?: string; id?: string; status?: string; json?: boolean }>();
      if (!values.name) throw new UsageError("catalog vendor upsert needs --name");
      await withDb(async (db) => {
        const catalogModule = await import("../../src/cloud/catalog.ts");
        const [existing] = values.id ? await catalogModule.getVendorsByIds(db, [values.id]) : [null];
        const { audited, CLI_ACTOR } = await import("../../src/audit/log.ts");
        const written = await audited(
          db,
          CLI_ACTOR,
          { action: "catalog.vendor.upsert", objectType: "vendor", objectId: values.id ?? null, before: async () => existing ?? null, objectIdOf: (v) => v.id },
          (trx: Knex.Transaction) => catalogModule.upsertVendor(trx, { id: values.id, name: values.name!, status: values.status ?? existing?.status }),
        );
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
      .option("--id <ID>", "the product to update, or the id of a new one (starting with prd_)")
      .option("--status <STATUS>", "available, sold_out or offline")
      .option("--stock <N|unlimited>", "units left to sell")
      .option("--cycle <NAME=YUAN|NAME:MONTHS=YUAN>", "a billing cycle and its price; repeat for several", (value: string, previous: string[] = []) => [
        ...previous,
        value,
      ])
      .option("--required <FIELD,...>", "fields an order must fill in")
      .option("--description <TEXT>", "description")
      .option("--json", "print it as JSON"),
    async function () {
      const values = this.opts<{
        vendor?: string;
        category?: string;
        name?: string;
        id?: string;
        status?: string;
        stock?: string;
        cycle?: string[];
        required?: string;
        description?: string;
        json?: boolean;
      }>();
      if (!values.vendor || !values.category || !values.name) throw new UsageError("catalog product upsert needs --vendor, --category and --name");
      let stock: number | null | undefined;
      if (values.stock !== undefined) {
        if (values.stock === "unlimited") stock = null;
        else stock = integerOption(values.stock, "stock", { min: 0, max: Number.MAX_SAFE_INTEGER }, "--stock must be a non-negative integer or unlimited")!;
      }
      const cycles = (values.cycle ?? []).map(cycleOption);
      // An empty --required clears the list.
      const required = values.required === undefined ? undefined : (list(values.required) ?? []);
      await withDb(async (db) => {
        const catalogModule = await import("../../src/cloud/catalog.ts");
        const existing = values.id ? await catalogModule.getProduct(db, values.id) : null;
        if (!existing && cycles.length === 0) throw new UsageError("catalog product upsert of a new product needs at least one --cycle NAME=YUAN");
        const { audited, CLI_ACTOR } = await import("../../src/audit/log.ts");
        const spec = { action: "catalog.product.upsert", objectType: "product", objectId: values.id ?? null, before: async () => existing ?? null };
        const written = await audited(db, CLI_ACTOR, { ...spec, objectIdOf: (p) => p.id }, (trx: Knex.Transaction) =>
          catalogModule.upsertProduct(trx, {
            id: values.id,
            vendorId: values.vendor!,
            category: values.category!,
            name: values.name!,
            description: values.description ?? existing?.description ?? null,
            status: values.status ?? existing?.status,
            billingCycles: cycles.length ? cycles : existing!.billingCycles,
            stock: stock !== undefined ? stock : (existing?.stock ?? null),
            requiredFields: required ?? existing?.requiredFields ?? [],
          }),
        );
        console.log(values.json ? JSON.stringify(productJson(written)) : productLine(written));
      });
    },
  );
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
  const match = /^([^:=\s]+)(?::(\d{1,3}))?=(.+)$/.exec(text);
  if (!match) throw new UsageError(`--cycle must be NAME=YUAN or NAME:MONTHS=YUAN, got ${JSON.stringify(text)}`);
  const [, cycle, months, price] = match;
  return { cycle: cycle!, months: integerOption(months, "cycle") ?? null, price: yuanOption(price, "cycle")! };
}
