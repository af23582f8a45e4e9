/**
 * Resolvers of the cloud subgraph (subgraphs/cloud/schema.graphql). Thin: every rule lives in src/cloud;
 * these hand the inputs to it as they are (camelCase, the domain's own dialect) and translate shapes.
 */
import { GraphQLScalarType, Kind, type ValueNode } from "graphql";
import { AppError } from "../../src/errors.ts";
import { toMoney } from "../../src/money.ts";
import { listProducts, listVendors, type ProductRecord, type VendorRecord } from "../../src/cloud/catalog.ts";
import type { OrderRecord } from "../../src/cloud/order-records.ts";
import type { ResourceRecord } from "../../src/cloud/resources.ts";
import { getCustomerBalance, type CustomerBalance } from "../../src/cloud/customers.ts";
import { getStatement, listTransactions, type StatementRecord, type TransactionRecord } from "../../src/cloud/billing.ts";
import { domainId, ID_PREFIXES } from "../../src/ids.ts";
import { createDomain, type CreateDomainInput, type DomainRecord } from "../../src/cloud/domains.ts";
import { getPurgeTask, purgeDomain, type PurgeInput } from "../../src/cloud/purge.ts";
import type { CreateOrderInput, RenewOrderInput } from "../../src/cloud/order-request.ts";
import { bandwidthUsage, setUsageThreshold, trafficUsage } from "../../src/cloud/usage.ts";
import { resendDelivery } from "../../src/events/deliveries.ts";
import { pageSize } from "../../src/pagination.ts";
import { pageOf, toConnection, type PageArgs } from "../shared/connection.ts";
import type { CloudContext } from "./context.ts";
import type { OutboxMessage } from "../../src/events/pubsub.ts";
import { keyEventStream } from "../shared/key-events.ts";
import { grantRead, type TypeScope } from "../shared/scopes.ts";
import { adminQueries } from "./admin.ts";
import { adminMutations } from "./admin-writes.ts";
import { operatorMutations, operatorQueries } from "./operators.ts";
import { DateTime } from "../shared/scalars.ts";
import { nodeQueries } from "./nodes.ts";

/** An order as one event left it: the fresh row, with the state the event recorded. */
function orderAtEvent(order: OrderRecord, event: OutboxMessage): OrderRecord {
  // The payload of an order event (src/cloud/order-records.ts orderPayload).
  const p = event.payload as {
    status?: OrderRecord["status"];
    payment_status?: OrderRecord["paymentStatus"];
    provisioning_status?: OrderRecord["provisioningStatus"];
    resource_id?: string | null;
    failure_reason?: string | null;
  };
  return {
    ...order,
    status: p.status ?? order.status,
    paymentStatus: p.payment_status ?? order.paymentStatus,
    provisioningStatus: p.provisioning_status ?? order.provisioningStatus,
    resourceId: p.resource_id ?? order.resourceId,
    failureReason: p.failure_reason ?? order.failureReason,
  };
}

const upper = (value: string) => value.toUpperCase();
const lower = (value: string | null | undefined) => (value == null ? value : value.toLowerCase());

/** The Idempotency-Key a write input carries (docs/api/cloud.md §5), kept out of the request it guards. */
type WithKey<T> = T & { idempotencyKey?: string | null };

function parseLiteralObject(ast: ValueNode): unknown {
  switch (ast.kind) {
    case Kind.OBJECT:
      return Object.fromEntries(ast.fields.map((f) => [f.name.value, parseLiteralObject(f.value)]));
    case Kind.LIST:
      return ast.values.map(parseLiteralObject);
    case Kind.STRING:
    case Kind.BOOLEAN:
      return ast.value;
    case Kind.INT:
    case Kind.FLOAT:
      return Number(ast.value);
    default:
      return null;
  }
}

/** `JSONObject`: any JSON object. */
const JSONObject = new GraphQLScalarType({
  name: "JSONObject",
  description: "A JSON object.",
  serialize: (value) => value,
  parseValue: (value) => {
    if (!value || typeof value !== "object" || Array.isArray(value)) throw new TypeError("JSONObject must be a JSON object");
    return value;
  },
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.OBJECT) throw new TypeError("JSONObject must be an object literal");
    return parseLiteralObject(ast);
  },
});

/**
 * The scope each type's data needs, wherever it is reached from (README "Scopes", ADR 0007;
 * applied by `scopeTypes` in server.ts). `open` fields are the type's key: whoever links to it
 * already holds it. `Account` and `ApiKey` are not here: each `Account` field checks its own
 * scope, and `ApiKey` is the calling key itself.
 */
export const TYPE_SCOPES: Record<string, TypeScope> = {
  Vendor: { scope: "catalog:read", open: ["id"] },
  Product: { scope: "catalog:read", open: ["id"] },
  Order: { scope: "orders:read", open: ["id"] },
  OrderEvent: { scope: "orders:read" },
  WebhookDelivery: { scope: "orders:read" },
  Resource: { scope: "resources:read", open: ["id"] },
  Domain: { scope: "domains:read", open: ["id", "domain"] },
  PurgeTask: { scope: "domains:read", open: ["id"] },
  BandwidthUsage: { scope: "usage:read" },
  TrafficUsage: { scope: "usage:read" },
  CustomerBalance: { scope: "billing:read" },
  Transaction: { scope: "billing:read", open: ["id"] },
  Statement: { scope: "billing:read", open: ["id"] },
  // The generation subgraph's task, known here by its id only (`node`, nodes.ts).
  Task: { scope: "generation", open: ["id"] },
};

export const resolvers = {
  DateTime,
  JSONObject,
  Query: {
    apiKey: async (_: unknown, __: unknown, ctx: CloudContext) => {
      const caller = await ctx.caller();
      // Only an active key authenticates, so the key of a request is always ACTIVE.
      return {
        id: caller.keyId,
        accountId: caller.accountId,
        status: "ACTIVE",
        scopes: caller.scopes,
        rateLimit: caller.rateLimit,
        allowedIps: caller.allowIps,
        requireSignature: caller.requireSignature,
      };
    },
    vendors: async (_: unknown, args: PageArgs, ctx: CloudContext) => {
      await ctx.caller("catalog:read");
      return toConnection(await listVendors(ctx.db, pageOf(args)));
    },
    products: async (_: unknown, args: PageArgs & { category?: string | null; vendorId?: string | null; status?: string | null }, ctx: CloudContext) => {
      await ctx.caller("catalog:read");
      return toConnection(
        await listProducts(
          ctx.db,
          { category: args.category ?? undefined, vendorId: args.vendorId ?? undefined, status: lower(args.status) ?? undefined },
          pageOf(args),
        ),
      );
    },
    product: async (_: unknown, { id }: { id: string }, ctx: CloudContext) => {
      await ctx.caller("catalog:read");
      const product = await ctx.products.load(id);
      if (!product) throw new AppError("not_found", "Product not found");
      return product;
    },
    order: async (_: unknown, { id }: { id: string }, ctx: CloudContext) => ctx.services.orders.get(await ctx.caller("orders:read"), id),
    orders: async (_: unknown, args: PageArgs, ctx: CloudContext) =>
      toConnection(await ctx.services.orders.list(await ctx.caller("orders:read"), pageOf(args))),
    domain: async (_: unknown, { domain }: { domain: string }, ctx: CloudContext) => {
      await ctx.caller("domains:read");
      const record = await ctx.domains.load(domain);
      if (!record) throw new AppError("not_found", "Domain not found");
      return record;
    },
    purgeTask: async (_: unknown, { id }: { id: string }, ctx: CloudContext) => getPurgeTask(ctx.db, await ctx.caller("domains:read"), id, ctx.services.stepMs),
    resources: async (_: unknown, args: PageArgs & { customerId?: string | null }, ctx: CloudContext) =>
      toConnection(await ctx.services.orders.listResources(await ctx.caller("resources:read"), pageOf(args), args.customerId ?? undefined)),
    bandwidthUsage: async (_: unknown, args: { resourceId: string; start: string; end: string }, ctx: CloudContext) =>
      bandwidthUsage(ctx.db, await ctx.caller("usage:read"), args),
    trafficUsage: async (_: unknown, args: { resourceId: string; start: string; end: string }, ctx: CloudContext) =>
      trafficUsage(ctx.db, await ctx.caller("usage:read"), args),
    customerBalance: async (_: unknown, { customerId }: { customerId: string }, ctx: CloudContext) => {
      const caller = await ctx.caller("billing:read");
      return getCustomerBalance(ctx.db, caller.accountId, customerId);
    },
    transactions: async (
      _: unknown,
      args: PageArgs & { customerId?: string | null; orderId?: string | null; type?: string | null; start?: string | null; end?: string | null },
      ctx: CloudContext,
    ) =>
      toConnection(
        await listTransactions(
          ctx.db,
          await ctx.caller("billing:read"),
          {
            customerId: args.customerId ?? undefined,
            orderId: args.orderId ?? undefined,
            type: lower(args.type) ?? undefined,
            start: args.start ?? undefined,
            end: args.end ?? undefined,
          },
          pageOf(args),
        ),
      ),
    statement: async (_: unknown, { id }: { id: string }, ctx: CloudContext) => getStatement(ctx.db, await ctx.caller("billing:read"), id),
    ...nodeQueries,
    ...adminQueries,
    ...operatorQueries,
  },
  Mutation: {
    createOrder: async (_: unknown, { input }: { input: WithKey<CreateOrderInput> }, ctx: CloudContext) => {
      const caller = await ctx.caller("orders:write");
      const { idempotencyKey = null, ...order } = input;
      const created = await ctx.services.orders.create(caller, order, { idempotencyKey, requestId: ctx.requestId });
      return { order: grantRead(ctx, created.order), replayed: created.replayed };
    },
    renewOrder: async (_: unknown, { input }: { input: WithKey<RenewOrderInput> & { orderId: string } }, ctx: CloudContext) => {
      const caller = await ctx.caller("orders:write");
      const { orderId, idempotencyKey = null, ...renewal } = input;
      const { order, replayed } = await ctx.services.orders.renew(caller, orderId, renewal, { idempotencyKey, requestId: ctx.requestId });
      return { order: grantRead(ctx, order), replayed };
    },
    payOrder: async (_: unknown, { input }: { input: { orderId: string } }, ctx: CloudContext) => ({
      order: grantRead(ctx, await ctx.services.orders.pay(await ctx.caller("orders:write"), input.orderId)),
    }),
    createDomain: async (_: unknown, { input }: { input: WithKey<CreateDomainInput> }, ctx: CloudContext) => {
      const caller = await ctx.caller("domains:write");
      const { idempotencyKey = null, ...fields } = input;
      const { domain, replayed } = await createDomain(ctx.db, caller, fields, {
        idempotencyKey,
        requestId: ctx.requestId,
        stepMs: ctx.services.stepMs,
        checkOriginHost: ctx.services.checkOriginHost,
      });
      return { domain: grantRead(ctx, domain), replayed };
    },
    purgeDomain: async (_: unknown, { input }: { input: WithKey<PurgeInput> & { domain: string } }, ctx: CloudContext) => {
      const caller = await ctx.caller("domains:write");
      const { domain, idempotencyKey = null, ...purge } = input;
      const { task, replayed } = await purgeDomain(ctx.db, caller, domain, purge, { idempotencyKey, requestId: ctx.requestId, stepMs: ctx.services.stepMs });
      return { purgeTask: grantRead(ctx, task), replayed };
    },
    setUsageThreshold: async (_: unknown, { input }: { input: { resourceId: string; thresholdBytes: number | null } }, ctx: CloudContext) => {
      const caller = await ctx.caller("resources:write");
      await setUsageThreshold(ctx.db, caller, input.resourceId, input.thresholdBytes ?? null);
      return { resource: grantRead(ctx, await ctx.services.orders.getResource(caller, input.resourceId)) };
    },
    resendDelivery: async (_: unknown, { input }: { input: { deliveryId: string } }, ctx: CloudContext) => {
      const caller = await ctx.caller("orders:write");
      return { delivery: grantRead(ctx, await resendDelivery(ctx.db, input.deliveryId, caller.accountId)) };
    },
    ...adminMutations,
    ...operatorMutations,
  },
  Subscription: {
    orderEvents: {
      subscribe: async (_: unknown, { orderId }: { orderId?: string | null }, ctx: CloudContext) => {
        const caller = await ctx.caller("orders:read");
        if (orderId) await ctx.services.orders.get(caller, orderId);
        const stream = keyEventStream(ctx.services.pubsub, ctx.db, caller, (e) => e.topic.startsWith("order.") && (!orderId || e.aggregateId === orderId));
        await stream.ready;
        return (async function* () {
          try {
            for await (const event of stream) {
              const order = await ctx.services.orders.get(caller, event.aggregateId).catch(() => null);
              if (!order) continue;
              // Each event's fields are resolved on a database budget of their own.
              ctx.budget.renew();
              yield {
                orderEvents: {
                  event: event.topic,
                  requestId: event.requestId ?? `evt_${event.id}`,
                  createdAt: event.createdAt,
                  order: orderAtEvent(order, event),
                },
              };
            }
            // The key was disabled: its last result is that error.
            if (stream.revoked) yield { orderEvents: stream.revoked };
          } finally {
            stream.close();
          }
        })();
      },
    },
  },
  Account: {
    // Any valid key (its fields check ownership and their own scope); none: 401.
    __resolveReference: async (ref: { id: string }, ctx: CloudContext) => {
      await ctx.caller();
      return { id: ref.id };
    },
    orders: async (account: { id: string }, args: PageArgs, ctx: CloudContext) => {
      const caller = await ctx.ownAccount(account.id, "orders:read");
      return caller ? toConnection(await ctx.services.orders.list(caller, pageOf(args))) : null;
    },
    resources: async (account: { id: string }, args: PageArgs & { customerId?: string | null }, ctx: CloudContext) => {
      const caller = await ctx.ownAccount(account.id, "resources:read");
      return caller ? toConnection(await ctx.services.orders.listResources(caller, pageOf(args), args.customerId ?? undefined)) : null;
    },
    customerBalance: async (account: { id: string }, { customerId }: { customerId: string }, ctx: CloudContext) => {
      const caller = await ctx.ownAccount(account.id, "billing:read");
      return caller ? getCustomerBalance(ctx.db, caller.accountId, customerId) : null;
    },
  },
  Vendor: {
    __resolveReference: (ref: { id: string }, ctx: CloudContext) => ctx.vendors.load(ref.id),
    status: (vendor: VendorRecord) => upper(vendor.status),
    // Forward only (no `last`/`before` in the SDL): one statement reads every vendor's page.
    products: async (vendor: VendorRecord, args: Pick<PageArgs, "first" | "after">, ctx: CloudContext) => {
      const { first, after } = pageOf(args);
      return toConnection(await ctx.vendorProducts.load({ parent: vendor.id, first, after: after ?? null }));
    },
  },
  Product: {
    __resolveReference: (ref: { id: string }, ctx: CloudContext) => ctx.products.load(ref.id),
    vendor: (product: ProductRecord, _: unknown, ctx: CloudContext) => ctx.vendors.load(product.vendorId),
    status: (product: ProductRecord) => upper(product.status),
    billingCycles: (product: ProductRecord) => product.billingCycles.map((c) => ({ cycle: c.cycle, months: c.months, price: toMoney(c.price) })),
  },
  Order: {
    __resolveReference: async (ref: { id: string }, ctx: CloudContext) => ((await ctx.callerOrNull()) ? ctx.orders.load(ref.id) : null),
    product: (order: OrderRecord, _: unknown, ctx: CloudContext) => ctx.products.load(order.productId),
    customer: (order: OrderRecord) => ({ customerId: order.customerId, contact: order.contact }),
    amount: (order: OrderRecord) => toMoney(order.amount),
    paymentStatus: (order: OrderRecord) => upper(order.paymentStatus),
    provisioningStatus: (order: OrderRecord) => upper(order.provisioningStatus),
    status: (order: OrderRecord) => upper(order.status),
    resource: (order: OrderRecord, _: unknown, ctx: CloudContext) => (order.resourceId ? ctx.resources.load(order.resourceId) : null),
    deliveries: async (order: OrderRecord, args: { first?: number }, ctx: CloudContext) =>
      ctx.orderDeliveries.load({ parent: order.id, accountId: order.accountId, first: pageSize(args.first) }),
  },
  Resource: {
    __resolveReference: async (ref: { id: string }, ctx: CloudContext) => ((await ctx.callerOrNull()) ? ctx.resources.load(ref.id) : null),
    order: (resource: ResourceRecord, _: unknown, ctx: CloudContext) => ctx.orders.load(resource.orderId),
    product: (resource: ResourceRecord, _: unknown, ctx: CloudContext) => ctx.products.load(resource.productId),
  },
  Domain: {
    // Keyed by `domain` or by `id` (`dom_<domain>`, exactly as `Domain.id` gives it).
    __resolveReference: async (ref: { domain?: string; id?: string }, ctx: CloudContext) => {
      const name = ref.domain ?? (ref.id?.startsWith(ID_PREFIXES.domain) ? ref.id.slice(ID_PREFIXES.domain.length) : null);
      if (!name || !(await ctx.callerOrNull())) return null;
      const domain = await ctx.domains.load(name);
      return ref.domain != null || domain?.domain === name ? domain : null;
    },
    id: (domain: DomainRecord) => domainId(domain.domain),
    order: (domain: DomainRecord, _: unknown, ctx: CloudContext) => ctx.orders.load(domain.orderId),
    purgeTasks: async (domain: DomainRecord, args: { first?: number }, ctx: CloudContext) => {
      await ctx.caller("domains:read");
      return ctx.domainPurgeTasks.load({ parent: domain.domain, first: pageSize(args.first) });
    },
  },
  PurgeTask: {
    __resolveReference: async (ref: { id: string }, ctx: CloudContext) => ((await ctx.callerOrNull()) ? ctx.purgeTasks.load(ref.id) : null),
  },
  Task: {
    // Only the calling key's task (the generation subgraph's rule); its fields are served there.
    __resolveReference: async (ref: { id: string }, ctx: CloudContext) =>
      (await ctx.callerOrNull()) && (await ctx.tasks.load(ref.id)) ? { id: ref.id } : null,
  },
  Transaction: {
    __resolveReference: async (ref: { id: string }, ctx: CloudContext) => ((await ctx.callerOrNull()) ? ctx.transactions.load(ref.id) : null),
    type: (t: TransactionRecord) => upper(t.type),
    amount: (t: TransactionRecord) => toMoney(t.amount),
    balanceAfter: (t: TransactionRecord) => toMoney(t.balanceAfter),
    order: (t: TransactionRecord, _: unknown, ctx: CloudContext) => (t.orderId ? ctx.orders.load(t.orderId) : null),
  },
  CustomerBalance: {
    available: (b: CustomerBalance) => toMoney(b.available),
    frozen: (b: CustomerBalance) => toMoney(b.frozen),
    creditLine: (b: CustomerBalance) => toMoney(b.creditLine),
    currency: () => "CNY",
  },
  Statement: {
    // As `statement(id:)` reads it, for the caller's account; another form of id names nothing.
    __resolveReference: async (ref: { id: string }, ctx: CloudContext) => ((await ctx.callerOrNull()) ? ctx.statements.load(ref.id) : null),
    totalAmount: (s: StatementRecord) => toMoney(s.totalAmount),
    exportUrl: (s: StatementRecord) => (s.exportStatus === "ready" ? `/openapi/v1/billing/statements/${s.id}/export` : null),
    csv: (s: StatementRecord) => (s.exportStatus === "ready" ? (s.csv ?? null) : null),
    items: (s: StatementRecord) =>
      s.items.map((t: TransactionRecord) => ({
        transactionId: t.id,
        customerId: t.customerId,
        orderId: t.orderId,
        type: upper(t.type),
        amount: toMoney(t.amount),
        createdAt: t.createdAt,
      })),
  },
};
