/**
 * Global object identification (docs/adr/0019-global-object-ids.md; issue 21 §1): `Query.node`
 * and `Query.nodes` of the cloud subgraph, which answer every type implementing `Node`, the
 * generation subgraph's `Task` included.
 *
 * An id's prefix names its type (src/ids.ts `kindOfId`), so the scope an id needs is known before
 * anything is read: the key is authenticated first (401), then the type's scope is required (403
 * `forbidden` with `extensions.scope`, at that id), then the object is read with the rule its own
 * root field uses (the caller's account, a task the calling key's). What the key may not read —
 * unknown, malformed, another account's or another key's — is null without an error, so an
 * answer never tells them apart.
 *
 * A task id is checked here (the calling key's task, src/generation/tasks/reads.ts `getTasksOfKey`, on
 * the database both subgraphs share) and answered as an entity reference `{ __typename: "Task",
 * id }`: the gateway fetches the fields a query selects from the generation subgraph's
 * `_entities`, which applies its scope and visibility again. Checked here so that `node(id:) { id }`,
 * which needs no generation field, is null for a task the key cannot see.
 */
import { AppError } from "../../src/errors.ts";
import { ID_PREFIXES, kindOfId, type IdKind } from "../../src/ids.ts";
import { MAX_PAGE_SIZE } from "../../src/pagination.ts";
import type { CloudContext } from "./context.ts";

/** The most ids one `nodes` call takes: a page's worth (src/pagination.ts). */
export const MAX_NODE_IDS = MAX_PAGE_SIZE;

/** How one kind of id is answered: its GraphQL type, the scope it needs, and the read. */
interface NodeType {
  typename: string;
  /** The key scope its data needs (README "Scopes"); null: any valid key. */
  scope: string | null;
  /** The caller's object with this id, or null (never another account's or key's). */
  read(ctx: CloudContext, id: string): Promise<object | null>;
}

/** Ids of catalog rows created before new ids had to carry their prefix (ADR 0019) carry none. */
const UNPREFIXED_CATALOG_ID = /^[A-Za-z0-9_-]{1,40}$/;

/**
 * A vendor or product by an id without a known prefix: the one table holding it, or null when
 * none does or both do (then the id names no single object).
 */
async function readUnprefixedCatalogEntry(ctx: CloudContext, id: string): Promise<object | null> {
  const [vendor, product] = await Promise.all([ctx.vendors.load(id), ctx.products.load(id)]);
  if (vendor && !product) return { ...vendor, __typename: "Vendor" };
  if (product && !vendor) return { ...product, __typename: "Product" };
  return null;
}

/** Every kind of global id (src/ids.ts ID_PREFIXES). */
const NODE_TYPES: Record<IdKind, NodeType> = {
  task: {
    typename: "Task",
    scope: "generation",
    // A reference: the generation subgraph serves the fields (`_entities`).
    read: async (ctx, id) => ((await ctx.tasks.load(id)) ? { id } : null),
  },
  order: { typename: "Order", scope: "orders:read", read: (ctx, id) => ctx.orders.load(id) },
  resource: { typename: "Resource", scope: "resources:read", read: (ctx, id) => ctx.resources.load(id) },
  domain: {
    typename: "Domain",
    scope: "domains:read",
    // Exactly the id `Domain.id` gives: the stored (lower-case) name, not any spelling of it.
    read: async (ctx, id) => {
      const name = id.slice(ID_PREFIXES.domain.length);
      const domain = await ctx.domains.load(name);
      return domain?.domain === name ? domain : null;
    },
  },
  purge: { typename: "PurgeTask", scope: "domains:read", read: (ctx, id) => ctx.purgeTasks.load(id) },
  product: { typename: "Product", scope: "catalog:read", read: (ctx, id) => ctx.products.load(id) },
  vendor: { typename: "Vendor", scope: "catalog:read", read: (ctx, id) => ctx.vendors.load(id) },
  transaction: { typename: "Transaction", scope: "billing:read", read: (ctx, id) => ctx.transactions.load(id) },
  // As `statement(id:)` reads it (which requests its CSV export); an id it refuses names nothing.
  statement: { typename: "Statement", scope: "billing:read", read: (ctx, id) => ctx.statements.load(id) },
  account: {
    typename: "Account",
    scope: null,
    // The caller's own account only (accounts never leak); its fields check their own scopes.
    read: async (ctx, id) => ((await ctx.caller()).accountId === id ? { id } : null),
  },
};

/**
 * Answers one global id for the caller.
 * @param id any string
 * @returns the object with its `__typename` (a Task as a reference), or null when the id names
 *   nothing the caller may read
 * @throws AppError 401/403/429 from authentication; 403 `forbidden` (`details.scope`) when the
 *   key lacks the scope of the id's type
 */
export async function resolveNode(ctx: CloudContext, id: string): Promise<object | null> {
  await ctx.caller();
  const kind = kindOfId(id);
  if (kind === null) {
    if (!UNPREFIXED_CATALOG_ID.test(id)) return null;
    await ctx.caller("catalog:read");
    return readUnprefixedCatalogEntry(ctx, id);
  }
  const type = NODE_TYPES[kind];
  if (type.scope) await ctx.caller(type.scope);
  const found = await type.read(ctx, id);
  return found ? { ...found, __typename: type.typename } : null;
}

/** `Query.node` and `Query.nodes`. */
export const nodeQueries = {
  node: (_: unknown, { id }: { id: string }, ctx: CloudContext) => resolveNode(ctx, id),
  /**
   * Each id answered alone: a refusal (a missing scope) is that item's error, and the others
   * survive. @throws AppError `invalid_request` (400, field `ids`) for more than {@link MAX_NODE_IDS} ids
   */
  nodes: async (_: unknown, { ids }: { ids: string[] }, ctx: CloudContext) => {
    if (ids.length > MAX_NODE_IDS) throw new AppError("invalid_request", `ids must list at most ${MAX_NODE_IDS} ids`, { field: "ids", limit: MAX_NODE_IDS });
    await ctx.caller();
    return ids.map((id) => resolveNode(ctx, id));
  },
};
