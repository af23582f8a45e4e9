/**
 * The cloud catalog (docs/api/cloud.md §1-2 "Vendor", "Product"; part 4 `GET /vendors`,
 * `GET /products`, `GET /products/{product_id}`; docs/architecture.md §8 names and the demo catalog).
 *
 * Vendors are the upstream clouds allowed for sale; products are what can be ordered: billing
 * cycles with prices (integer milli-yuan, docs/architecture.md §3), stock (null = unlimited), the metadata
 * keys required for activation, and a sale status. Only `available` products can be ordered.
 * Admins manage the catalog through {@link upsertVendor} and {@link upsertProduct}; `npm start`
 * seeds the demo catalog (demo-seed.ts).
 */
import { AppError, notOneOfError } from "../errors.ts";
import { nowIso, type Db } from "../db/index.ts";
import { placeholders, selectRows } from "../db/rows.ts";
import { ID_PREFIXES, newId } from "../ids.ts";
import { byCreation, keysetPage, keysetPagesByParent, type Page, type PageRequest } from "../pagination.ts";
import type { MilliYuan } from "../money.ts";
import { invalid } from "./validation.ts";
import { isOneOf, PRODUCT_STATUSES, VENDOR_STATUSES, type ProductStatus, type VendorStatus } from "./states.ts";
import { isBlank } from "../text.ts";

/** An upstream vendor. Times ISO 8601. */
export interface VendorRecord {
  id: string;
  name: string;
  status: VendorStatus;
  createdAt: string;
}

/** One billing cycle of a product: its name, its length in calendar months, its price per unit. */
export interface BillingCycle {
  /** For example `monthly`, `quarterly`, `yearly`. */
  cycle: string;
  /** Length of one period in calendar months (1-120). */
  months: number;
  /** Price of one unit for one period, in milli-yuan (positive). */
  price: MilliYuan;
}

/** A product. Prices in milli-yuan, times ISO 8601. */
export interface ProductRecord {
  id: string;
  vendorId: string;
  category: string;
  name: string;
  description: string | null;
  status: ProductStatus;
  billingCycles: BillingCycle[];
  /** Units left; null = unlimited. */
  stock: number | null;
  /** Metadata keys an order must carry as non-empty strings (for example `domain`). */
  requiredFields: string[];
  createdAt: string;
  updatedAt: string;
}

/** Filters of {@link listProducts}; all optional and combined with AND. */
export interface ProductFilter {
  category?: string | null;
  vendorId?: string | null;
  status?: string | null;
}

/** What {@link upsertVendor} takes. */
export interface VendorInput {
  /** Omitted: a new vendor with a generated id (`vnd_…`); a new vendor's chosen id starts with `vnd_`. */
  id?: string | null;
  name: string;
  /** Default `active`. */
  status?: VendorStatus | string | null;
}

/** What {@link upsertProduct} takes: the whole product (an update replaces every field). */
export interface ProductInput {
  /** Omitted: a new product with a generated id (`prd_…`); a new product's chosen id starts with `prd_`. */
  id?: string | null;
  vendorId: string;
  category: string;
  name: string;
  description?: string | null;
  /** Default `available`. */
  status?: ProductStatus | string | null;
  /** `months` may be omitted for a well-known cycle name (see {@link monthsOfCycle}). */
  billingCycles: { cycle: string; months?: number | null; price: MilliYuan }[];
  /** Null or omitted: unlimited. */
  stock?: number | null;
  requiredFields?: string[] | null;
}

/** Largest accepted unit price, milli-yuan (10 million yuan), so price × 1000 units × 36 periods stays exact. */
export const MAX_UNIT_PRICE: MilliYuan = 10_000_000_000;
/** Largest stock: the range of the `products.stock` integer column (PostgreSQL enforces it). */
export const MAX_STOCK = 2_147_483_647;

const ID_PATTERN = /^[A-Za-z0-9_-]{1,40}$/;
const CATEGORY_PATTERN = /^[a-z0-9][a-z0-9_-]{0,39}$/;
const CYCLE_PATTERN = /^[a-z0-9][a-z0-9_-]{0,19}$/;
const FIELD_PATTERN = /^[A-Za-z][A-Za-z0-9_]{0,39}$/;

/** Months of the well-known billing cycle names, so a cycle can be given by name and price alone. */
export const CYCLE_MONTHS: Readonly<Record<string, number>> = {
  month: 1,
  monthly: 1,
  quarter: 3,
  quarterly: 3,
  semiannual: 6,
  semiannually: 6,
  "half-yearly": 6,
  half_yearly: 6,
  year: 12,
  yearly: 12,
  annual: 12,
  annually: 12,
  biennial: 24,
  biennially: 24,
  triennial: 36,
  triennially: 36,
};

/**
 * The length in calendar months a billing cycle name implies (`monthly` 1, `quarterly` 3,
 * `semiannual` 6, `yearly` 12, `biennial` 24, `triennial` 36, and their variants in
 * {@link CYCLE_MONTHS}).
 * @returns the months, or null for a name that implies none (its months must then be given)
 */
export function monthsOfCycle(cycle: string): number | null {
  return Object.hasOwn(CYCLE_MONTHS, cycle) ? CYCLE_MONTHS[cycle]! : null;
}

/** A `vendors` row. */
interface VendorRow {
  id: string;
  name: string;
  status: VendorStatus;
  created_at: string;
}

/** A `products` row (JSON columns as text). */
export interface ProductRow {
  id: string;
  vendor_id: string;
  category: string;
  name: string;
  description: string | null;
  status: ProductStatus;
  billing_cycles: string;
  stock: number | string | null;
  required_fields: string;
  created_at: string;
  updated_at: string;
}

/** The columns of a {@link ProductRow}, quoted for fixed SQL text (src/db/rows.ts). */
const PRODUCT_COLUMNS =
  '"id", "vendor_id", "category", "name", "description", "status", "billing_cycles", "stock", "required_fields", "created_at", "updated_at"';

/** Converts a `vendors` row. */
function toVendorRecord(row: VendorRow): VendorRecord {
  return { id: row.id, name: row.name, status: row.status, createdAt: row.created_at };
}

/** Converts a `products` row (money in milli-yuan). */
export function toProductRecord(row: ProductRow): ProductRecord {
  return {
    id: row.id,
    vendorId: row.vendor_id,
    category: row.category,
    name: row.name,
    description: row.description ?? null,
    status: row.status,
    billingCycles: (JSON.parse(row.billing_cycles) as BillingCycle[]).map((c) => ({ cycle: c.cycle, months: Number(c.months), price: Number(c.price) })),
    stock: row.stock == null ? null : Number(row.stock),
    requiredFields: JSON.parse(row.required_fields),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * Lists vendors, newest first (keyset pagination on creation time, then id).
 * @param page `first` (1-100) and the opaque cursor `after`
 * @returns a page of vendors
 * @throws AppError `invalid_request` (400, field `cursor`) for a bad cursor
 * @see docs/api/cloud.md §4 `GET /vendors`
 */
export async function listVendors(db: Db, page: PageRequest): Promise<Page<VendorRecord>> {
  return keysetPage(db("vendors").select("*"), byCreation(), page, toVendorRecord);
}

/**
 * Lists products filtered by category, vendor and sale status, newest first.
 * @param filter optional `category`, `vendorId`, `status` (one of `available`, `sold_out`, `offline`)
 * @param page `first` (1-100) and the opaque cursor `after`
 * @returns a page of products
 * @throws AppError `invalid_request` (400) for an unknown status (field `status`) or a bad cursor
 * @see docs/api/cloud.md §4 `GET /products?category=&vendor_id=`
 */
export async function listProducts(db: Db, filter: ProductFilter, page: PageRequest): Promise<Page<ProductRecord>> {
  const query = db("products").select("*");
  if (filter.category != null && filter.category !== "") query.where("category", filter.category);
  if (filter.vendorId != null && filter.vendorId !== "") query.where("vendor_id", filter.vendorId);
  if (filter.status != null && filter.status !== "") {
    if (!isOneOf(PRODUCT_STATUSES, filter.status)) {
      throw notOneOfError("invalid_request", "status", PRODUCT_STATUSES);
    }
    query.where("status", filter.status);
  }
  return keysetPage(query, byCreation(), page, toProductRecord);
}

/**
 * The same page of products of many vendors in one SQL statement (GraphQL `Vendor.products`,
 * batched per request): what {@link listProducts} with `vendorId` returns for each vendor.
 * @param vendorIds the vendors (duplicates allowed)
 * @param page `first` (1-100) and the opaque cursor `after`, the same for every vendor
 * @returns each vendor's page, newest first (an empty page for a vendor without products)
 * @throws AppError `invalid_request` (400, field `cursor`) for a bad cursor
 */
export async function listProductsOfVendors(db: Db, vendorIds: readonly string[], page: PageRequest): Promise<Map<string, Page<ProductRecord>>> {
  return keysetPagesByParent(db, db("products").select("*"), "vendor_id", vendorIds, byCreation(), page, toProductRecord);
}

/**
 * Reads one product.
 * @returns the product, or null when no product has that id
 * @see docs/api/cloud.md §4 `GET /products/{product_id}` (the caller turns null into 404)
 */
export async function getProduct(db: Db, id: string): Promise<ProductRecord | null> {
  if (typeof id !== "string" || !ID_PATTERN.test(id)) return null;
  const row = await db("products").where("id", id).first();
  return row ? toProductRecord(row) : null;
}

/**
 * Reads many products in one query (for DataLoader).
 * @returns one entry per id, in the order of `ids`, null where no product has that id
 */
export async function getProductsByIds(db: Db, ids: readonly string[]): Promise<(ProductRecord | null)[]> {
  if (ids.length === 0) return [];
  const unique = [...new Set(ids)];
  const rows = await selectRows<ProductRow>(db, `select ${PRODUCT_COLUMNS} from "products" where "id" in (${placeholders(unique.length)})`, unique);
  const byId = new Map(rows.map((row) => [row.id, toProductRecord(row)]));
  return ids.map((id) => byId.get(id) ?? null);
}

/**
 * Reads many vendors in one query (for DataLoader).
 * @returns one entry per id, in the order of `ids`, null where no vendor has that id
 */
export async function getVendorsByIds(db: Db, ids: readonly string[]): Promise<(VendorRecord | null)[]> {
  if (ids.length === 0) return [];
  const unique = [...new Set(ids)];
  const rows = await selectRows<VendorRow>(
    db,
    `select "id", "name", "status", "created_at" from "vendors" where "id" in (${placeholders(unique.length)})`,
    unique,
  );
  const byId = new Map(rows.map((row) => [row.id, toVendorRecord(row)]));
  return ids.map((id) => byId.get(id) ?? null);
}

function checkId(value: unknown, field: string): string | null {
  if (value == null || value === "") return null;
  if (typeof value !== "string" || !ID_PATTERN.test(value)) throw invalid(field, `${field} must be 1-40 letters, digits, '_' or '-'`);
  return value;
}

/**
 * Refuses an operator-chosen id for a new row unless it carries its type's prefix (`vnd_`,
 * `prd_`), so a global id names one kind of object (docs/adr/0019-global-object-ids.md). A row
 * that already exists keeps its id, whatever it is.
 * @throws AppError `validation_failed` (422, field `id`)
 */
async function checkNewId(db: Db, table: "vendors" | "products", id: string, prefix: string): Promise<void> {
  if (id.startsWith(prefix) || (await db(table).where("id", id).first("id"))) return;
  const what = table === "vendors" ? "vendor" : "product";
  throw invalid("id", `the id of a new ${what} must start with ${prefix}`);
}

function checkName(value: unknown, field: string, max: number): string {
  // U+0000 cannot be stored in PostgreSQL text: invalid on every database.
  if (typeof value !== "string" || isBlank(value) || value.length > max || value.includes("\u0000"))
    throw invalid(field, `${field} must be a non-empty string of at most ${max} characters`);
  return value.trim();
}

/**
 * Creates or replaces a vendor (admin).
 * @param input id (optional; an existing vendor's, or a new one starting with `vnd_`), name (1-200
 *   characters), status (`active` default, or `inactive`)
 * @returns the stored vendor
 * @throws AppError `validation_failed` (422, `details.field` = the input field) for a bad field
 * @see issue 3 "Catalog": admins manage it with the CLI or admin GraphQL mutations
 */
export async function upsertVendor(db: Db, input: VendorInput): Promise<VendorRecord> {
  if (!input || typeof input !== "object") throw new AppError("invalid_request", "vendor input must be an object");
  const chosen = checkId(input.id, "id");
  const name = checkName(input.name, "name", 200);
  const status = input.status ?? "active";
  if (!isOneOf(VENDOR_STATUSES, status)) throw notOneOfError("validation_failed", "status", VENDOR_STATUSES);
  if (chosen) await checkNewId(db, "vendors", chosen, ID_PREFIXES.vendor);
  const id = chosen ?? newId("vnd");
  const now = nowIso();
  await db("vendors").insert({ id, name, status, created_at: now }).onConflict("id").merge(["name", "status"]);
  return toVendorRecord(await db("vendors").where("id", id).first());
}

/**
 * Validates a product input without touching the database (the vendor is checked by
 * {@link upsertProduct}).
 * @returns the normalized columns
 * @throws AppError `validation_failed` (422) naming the first bad field, for example
 *   `billingCycles[1].price`
 */
function validateProductInput(input: ProductInput) {
  if (!input || typeof input !== "object") throw new AppError("invalid_request", "product input must be an object");
  const id = checkId(input.id, "id");
  const vendorId = checkId(input.vendorId, "vendorId");
  if (!vendorId) throw invalid("vendorId", "vendorId is required");
  if (typeof input.category !== "string" || !CATEGORY_PATTERN.test(input.category)) {
    throw invalid("category", "category must be 1-40 lower-case letters, digits, '_' or '-'");
  }
  const name = checkName(input.name, "name", 200);
  let description: string | null = null;
  if (input.description != null) {
    if (typeof input.description !== "string" || input.description.length > 2000 || input.description.includes("\u0000"))
      throw invalid("description", "description must be a string of at most 2000 characters");
    description = input.description;
  }
  const status = input.status ?? "available";
  if (!isOneOf(PRODUCT_STATUSES, status)) throw notOneOfError("validation_failed", "status", PRODUCT_STATUSES);
  if (!Array.isArray(input.billingCycles) || input.billingCycles.length === 0 || input.billingCycles.length > 20) {
    throw invalid("billingCycles", "billingCycles must list 1-20 cycles");
  }
  const seen = new Set<string>();
  const cycles: BillingCycle[] = input.billingCycles.map((c, i) => {
    const at = `billingCycles[${i}]`;
    if (!c || typeof c !== "object") throw invalid(at, `${at} must be an object`);
    if (typeof c.cycle !== "string" || !CYCLE_PATTERN.test(c.cycle))
      throw invalid(`${at}.cycle`, `${at}.cycle must be 1-20 lower-case letters, digits, '_' or '-'`);
    if (seen.has(c.cycle)) throw invalid(`${at}.cycle`, `${at}.cycle repeats ${c.cycle}`);
    seen.add(c.cycle);
    const months = c.months ?? monthsOfCycle(c.cycle);
    if (months == null) throw invalid(`${at}.months`, `${at}.months is required: the cycle name ${c.cycle} implies no length`);
    if (!Number.isInteger(months) || months < 1 || months > 120) throw invalid(`${at}.months`, `${at}.months must be an integer from 1 to 120`);
    if (!Number.isSafeInteger(c.price) || c.price <= 0 || c.price > MAX_UNIT_PRICE) {
      throw invalid(`${at}.price`, `${at}.price must be a positive integer of milli-yuan up to ${MAX_UNIT_PRICE}`);
    }
    return { cycle: c.cycle, months, price: c.price };
  });
  let stock: number | null = null;
  if (input.stock != null) {
    if (!Number.isSafeInteger(input.stock) || input.stock < 0 || input.stock > MAX_STOCK) {
      throw invalid("stock", `stock must be a non-negative integer up to ${MAX_STOCK} or null (unlimited)`);
    }
    stock = input.stock;
  }
  const requiredFields = input.requiredFields ?? [];
  if (!Array.isArray(requiredFields) || requiredFields.length > 20) throw invalid("requiredFields", "requiredFields must list at most 20 metadata keys");
  requiredFields.forEach((f, i) => {
    if (typeof f !== "string" || !FIELD_PATTERN.test(f))
      throw invalid(`requiredFields[${i}]`, `requiredFields[${i}] must be a metadata key of letters, digits and '_'`);
    if (requiredFields.indexOf(f) !== i) throw invalid(`requiredFields[${i}]`, `requiredFields[${i}] repeats ${f}`);
  });
  return { id, vendorId, category: input.category, name, description, status, cycles, stock, requiredFields: [...requiredFields] };
}

/**
 * Creates or replaces a product (admin). An update replaces every field but keeps `createdAt`.
 * Prices are positive milli-yuan: free products are not sold through orders. A cycle's `months`
 * may be omitted when its name implies them ({@link monthsOfCycle}).
 * @param input the product (see {@link ProductInput})
 * @returns the stored product
 * @throws AppError `validation_failed` (422, `details.field` = the camelCase input field, for
 *   example `billingCycles[0].price`; `vendorId` when no vendor has that id; `id` for a new
 *   product whose chosen id does not start with `prd_`)
 * @see issue 3 "Catalog"
 */
export async function upsertProduct(db: Db, input: ProductInput): Promise<ProductRecord> {
  const p = validateProductInput(input);
  const vendor = await db("vendors").where("id", p.vendorId).first("id");
  if (!vendor) throw invalid("vendorId", "vendorId does not name a vendor");
  if (p.id) await checkNewId(db, "products", p.id, ID_PREFIXES.product);
  const id = p.id ?? newId("prd");
  const now = nowIso();
  const columns = {
    vendor_id: p.vendorId,
    category: p.category,
    name: p.name,
    description: p.description,
    status: p.status,
    billing_cycles: JSON.stringify(p.cycles),
    stock: p.stock,
    required_fields: JSON.stringify(p.requiredFields),
    updated_at: now,
  };
  await db("products")
    .insert({ id, ...columns, created_at: now })
    .onConflict("id")
    .merge(Object.keys(columns));
  return toProductRecord(await db("products").where("id", id).first());
}
