import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../support/process.ts";

describe("managing the catalog with `switchyard catalog` as an operator does", () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "switchyard-catalog-cli-"));
  const env = { DATA_DIR: dataDir };
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  /** `catalog product upsert --json` of prd_block (Cirrus block storage) with `options`. */
  const BLOCK = ["--id", "prd_block", "--vendor", "vnd_cirrus", "--category", "storage", "--name", "Block storage 100 GiB"];
  const upsertBlock = (...options: string[]) => runCli(["catalog", "product", "upsert", ...BLOCK, ...options, "--json"], env);

  it("upserts a vendor and a product priced in yuan, updates the product keeping omitted options, and lists both", async () => {
    const vendor = await runCli(["catalog", "vendor", "upsert", "--id", "vnd_cirrus", "--name", "Cirrus Compute", "--json"], env);
    expect(vendor.code).toBe(0);
    expect(JSON.parse(vendor.stdout)).toMatchObject({ vendor_id: "vnd_cirrus", name: "Cirrus Compute", status: "active" });

    const cycles = ["--cycle", "monthly=30", "--cycle", "yearly=300.5", "--cycle", "trial:2=0.125"];
    const created = await upsertBlock("--stock", "10", ...cycles, "--required", "volume,zone");
    expect(created.code).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({
      product_id: "prd_block",
      vendor_id: "vnd_cirrus",
      category: "storage",
      status: "available",
      stock: 10,
      required_fields: ["volume", "zone"],
      billing_cycles: [
        { cycle: "monthly", months: 1, price: "30.00" },
        { cycle: "yearly", months: 12, price: "300.50" },
        { cycle: "trial", months: 2, price: "0.125" },
      ],
    });

    const updated = await upsertBlock("--status", "sold_out");
    expect(updated.code).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({
      status: "sold_out",
      stock: 10,
      required_fields: ["volume", "zone"],
      billing_cycles: [{ price: "30.00" }, { price: "300.50" }, { price: "0.125" }],
    });

    const products = await runCli(["catalog", "products", "--json"], env);
    expect(products.code).toBe(0);
    expect(JSON.parse(products.stdout)).toEqual([expect.objectContaining({ product_id: "prd_block", status: "sold_out" })]);
    const vendors = await runCli(["catalog", "vendors"], env);
    expect(vendors.code).toBe(0);
    expect(vendors.stdout).toMatch(/vnd_cirrus\s+active\s+Cirrus Compute/);
  });

  it("exits 1 with the message for an unknown vendor and 2 for a missing option or a malformed --cycle", async () => {
    const unknownVendor = await runCli(
      ["catalog", "product", "upsert", "--vendor", "vnd_nope", "--category", "cdn", "--name", "X", "--cycle", "monthly=1"],
      env,
    );
    expect(unknownVendor.code).toBe(1);
    expect(unknownVendor.stderr).toMatch(/vendorId does not name a vendor/);
    const missing = await runCli(["catalog", "product", "upsert", "--vendor", "vnd_cirrus", "--name", "X", "--cycle", "monthly"], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/needs --vendor, --category and --name/);
    const malformed = await runCli(["catalog", "product", "upsert", "--vendor", "vnd_cirrus", "--category", "cdn", "--name", "X", "--cycle", "monthly"], env);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toMatch(/--cycle must be NAME=YUAN/);
  });
});
