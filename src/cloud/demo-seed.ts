/**
 * The demo catalog `npm start` seeds (docs/architecture.md §8 the demo catalog): two vendors and
 * four products covering each sale state. `start` seeds it only when `config.seedDemo` says so
 * (not in production unless asked: README "Demo data", ADR 0016); tests and the bench call it themselves. Kept apart from the catalog's rules (catalog.ts) because
 * it is data, and tests and the bench name its ids.
 */
import { nowIso, type Db } from "../db/index.ts";
import type { ProductRecord, VendorRecord } from "./catalog.ts";

/** Ids of the demo catalog (stable, so the README walk-through and tests can name them). */
export const DEMO_CATALOG = {
  vendors: { nimbus: "vnd_nimbus", stratus: "vnd_stratus" },
  products: {
    cdn: "prd_cdn_standard",
    compute: "prd_vm_2c4g",
    soldOut: "prd_vm_gpu_a10",
    offline: "prd_cdn_legacy",
  },
} as const;

const DEMO_VENDORS: VendorRecord[] = [
  { id: DEMO_CATALOG.vendors.nimbus, name: "Nimbus Cloud", status: "active", createdAt: "" },
  { id: DEMO_CATALOG.vendors.stratus, name: "Stratus Networks", status: "active", createdAt: "" },
];

const DEMO_PRODUCTS: Omit<ProductRecord, "createdAt" | "updatedAt">[] = [
  {
    id: DEMO_CATALOG.products.cdn,
    vendorId: DEMO_CATALOG.vendors.nimbus,
    category: "cdn",
    name: "CDN acceleration, standard",
    description: "Edge acceleration for one domain; 1 TB of traffic per month per unit.",
    status: "available",
    billingCycles: [
      { cycle: "monthly", months: 1, price: 30_000 },
      { cycle: "quarterly", months: 3, price: 85_000 },
      { cycle: "yearly", months: 12, price: 300_000 },
    ],
    stock: null,
    requiredFields: ["domain"],
  },
  {
    id: DEMO_CATALOG.products.compute,
    vendorId: DEMO_CATALOG.vendors.stratus,
    category: "compute",
    name: "Cloud server 2 vCPU / 4 GiB",
    description: "A general-purpose virtual machine with a 40 GiB system disk.",
    status: "available",
    billingCycles: [
      { cycle: "monthly", months: 1, price: 99_000 },
      { cycle: "quarterly", months: 3, price: 285_000 },
      { cycle: "yearly", months: 12, price: 999_000 },
    ],
    stock: 500,
    requiredFields: [],
  },
  {
    id: DEMO_CATALOG.products.soldOut,
    vendorId: DEMO_CATALOG.vendors.stratus,
    category: "compute",
    name: "GPU server A10, 8 vCPU / 32 GiB",
    description: "Sold out until the vendor adds capacity.",
    status: "sold_out",
    billingCycles: [{ cycle: "monthly", months: 1, price: 2_999_000 }],
    stock: 0,
    requiredFields: [],
  },
  {
    id: DEMO_CATALOG.products.offline,
    vendorId: DEMO_CATALOG.vendors.nimbus,
    category: "cdn",
    name: "CDN acceleration, legacy plan",
    description: "Withdrawn from sale; existing resources keep working.",
    status: "offline",
    billingCycles: [{ cycle: "monthly", months: 1, price: 25_000 }],
    stock: null,
    requiredFields: ["domain"],
  },
];

/**
 * Seeds the demo catalog (docs/architecture.md §8): two vendors, a CDN product (category `cdn`, requires
 * `metadata.domain`, monthly/quarterly/yearly), a compute product with limited stock, a
 * `sold_out` product (stock 0) and an `offline` one. Idempotent: rows that exist are left as
 * they are, so admin edits survive a restart. Ids are in {@link DEMO_CATALOG}.
 * @returns nothing
 */
export async function seedDemoCatalog(db: Db): Promise<void> {
  const now = nowIso();
  await db.transaction(async (trx) => {
    for (const v of DEMO_VENDORS) {
      await trx("vendors").insert({ id: v.id, name: v.name, status: v.status, created_at: now }).onConflict("id").ignore();
    }
    for (const p of DEMO_PRODUCTS) {
      await trx("products")
        .insert({
          id: p.id,
          vendor_id: p.vendorId,
          category: p.category,
          name: p.name,
          description: p.description,
          status: p.status,
          billing_cycles: JSON.stringify(p.billingCycles),
          stock: p.stock,
          required_fields: JSON.stringify(p.requiredFields),
          created_at: now,
          updated_at: now,
        })
        .onConflict("id")
        .ignore();
    }
  });
}
