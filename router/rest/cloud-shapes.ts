/**
 * What the cloud REST shim (router/rest/cloud.ts) asks the graph and how it answers: the GraphQL
 * operation of each documented call, the shape of the data that comes back, and the spec's
 * snake_case REST body made from it (docs/api/cloud.md §2-6, docs/architecture.md §8).
 */
import { yuanNumber } from "../../src/shared/money.js";

const PRODUCT = `id category name description status stock requiredFields vendor { id } billingCycles { cycle months price { amount } }`;
const ORDER = `id clientOrderNo quantity billingCycle metadata amount { amount } paymentStatus provisioningStatus status failureReason createdAt updatedAt
  product { id } customer { customerId contact } resource { id }`;
const RESOURCE = `id status expiresAt customerId order { id } product { id }`;
const DOMAIN = `domain cname reviewStatus resolutionStatus certificateStatus accelerationStatus errorStatus protocol customerId
  origin { type address port } order { id }`;
const PURGE = `id domain type targets status createdAt completedAt`;
const TRANSACTION = `id customerId type amount { amount } balanceAfter { amount } createdAt order { id }`;
const PAGE = `pageInfo { hasNextPage endCursor }`;

/** The operations of this shim. */
export const CLOUD_OPERATIONS = {
  vendors: `query RestVendors($first: Int, $after: String) { vendors(first: $first, after: $after) { nodes { id name status } ${PAGE} } }`,
  products: `query RestProducts($first: Int, $after: String, $category: String, $vendorId: ID, $status: ProductStatus) {
    products(first: $first, after: $after, category: $category, vendorId: $vendorId, status: $status) { nodes { ${PRODUCT} } ${PAGE} } }`,
  product: `query RestProduct($id: ID!) { product(id: $id) { ${PRODUCT} } }`,
  createOrder: `mutation RestCreateOrder($input: CreateOrderInput!) { createOrder(input: $input) { replayed order { ${ORDER} } } }`,
  order: `query RestOrder($id: ID!) { order(id: $id) { ${ORDER} } }`,
  orders: `query RestOrders($first: Int, $after: String) { orders(first: $first, after: $after) { nodes { ${ORDER} } ${PAGE} } }`,
  renewOrder: `mutation RestRenewOrder($input: RenewOrderInput!) { renewOrder(input: $input) { replayed order { ${ORDER} } } }`,
  createDomain: `mutation RestCreateDomain($input: CreateDomainInput!) { createDomain(input: $input) { replayed domain { ${DOMAIN} } } }`,
  domain: `query RestDomain($domain: String!) { domain(domain: $domain) { ${DOMAIN} } }`,
  purge: `mutation RestPurge($input: PurgeDomainInput!) { purgeDomain(input: $input) { replayed purgeTask { ${PURGE} } } }`,
  bandwidth: `query RestBandwidth($resourceId: ID!, $start: String!, $end: String!) {
    bandwidthUsage(resourceId: $resourceId, start: $start, end: $end) { resourceId intervalSeconds peakBps points { time bps } } }`,
  traffic: `query RestTraffic($resourceId: ID!, $start: String!, $end: String!) {
    trafficUsage(resourceId: $resourceId, start: $start, end: $end) { resourceId totalBytes items { date bytes } } }`,
  resources: `query RestResources($first: Int, $after: String, $customerId: String) { resources(first: $first, after: $after, customerId: $customerId) { nodes { ${RESOURCE} } ${PAGE} } }`,
  balance: `query RestBalance($customerId: String!) { customerBalance(customerId: $customerId) { customerId available { amount } frozen { amount } creditLine { amount } currency } }`,
  transactions: `query RestTransactions($first: Int, $after: String, $customerId: String, $orderId: ID, $type: TransactionType, $start: String, $end: String) {
    transactions(first: $first, after: $after, customerId: $customerId, orderId: $orderId, type: $type, start: $start, end: $end) { nodes { ${TRANSACTION} } ${PAGE} } }`,
  statement: `query RestStatement($id: ID!) { statement(id: $id) { id period totalAmount { amount } exportStatus exportUrl
    items { transactionId customerId orderId type amount { amount } createdAt } } }`,
  statementCsv: `query RestStatementCsv($id: ID!) { statement(id: $id) { id exportStatus csv } }`,
  auth: `query RestCloudAuth { apiKey { id scopes } }`,
} as const;

/** The objects the operations above select (their GraphQL field names). */
type Money = { amount: string };
type Ref = { id: string };
export interface Connection<T> {
  nodes: T[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}
interface VendorNode {
  id: string;
  name: string;
  status: string;
}
interface ProductNode {
  id: string;
  category: string;
  name: string;
  description: string | null;
  status: string;
  stock: number | null;
  requiredFields: string[];
  vendor: Ref;
  billingCycles: { cycle: string; months: number; price: Money }[];
}
interface OrderNode {
  id: string;
  clientOrderNo: string;
  quantity: number;
  billingCycle: string;
  metadata: Record<string, unknown>;
  amount: Money;
  paymentStatus: string;
  provisioningStatus: string;
  status: string;
  failureReason: string | null;
  createdAt: string;
  updatedAt: string;
  product: Ref;
  customer: { customerId: string; contact: string | null };
  resource: Ref | null;
}
interface ResourceNode {
  id: string;
  status: string;
  expiresAt: string;
  customerId: string;
  order: Ref;
  product: Ref;
}
interface DomainNode {
  domain: string;
  cname: string;
  reviewStatus: string;
  resolutionStatus: string;
  certificateStatus: string;
  accelerationStatus: string;
  errorStatus: string;
  protocol: string;
  customerId: string;
  origin: { type: string; address: string; port: number | null };
  order: Ref;
}
interface PurgeNode {
  id: string;
  domain: string;
  type: string;
  targets: string[];
  status: string;
  createdAt: string;
  completedAt: string | null;
}
interface TransactionNode {
  id: string;
  customerId: string;
  type: string;
  amount: Money;
  balanceAfter: Money;
  createdAt: string;
  order: Ref | null;
}
interface BalanceNode {
  customerId: string;
  available: Money;
  frozen: Money;
  creditLine: Money;
  currency: string;
}
interface StatementNode {
  id: string;
  period: string;
  totalAmount: Money;
  exportStatus: string;
  exportUrl: string | null;
  items: { transactionId: string; customerId: string; orderId: string | null; type: string; amount: Money; createdAt: string }[];
}
/** The `data` of CLOUD_OPERATIONS by root field (each operation fills its own). */
export interface CloudData {
  vendors: Connection<VendorNode>;
  products: Connection<ProductNode>;
  product: ProductNode;
  createOrder: { replayed: boolean; order: OrderNode };
  order: OrderNode;
  orders: Connection<OrderNode>;
  renewOrder: { replayed: boolean; order: OrderNode };
  createDomain: { replayed: boolean; domain: DomainNode };
  domain: DomainNode;
  purgeDomain: { replayed: boolean; purgeTask: PurgeNode };
  bandwidthUsage: { resourceId: string; intervalSeconds: number; peakBps: number; points: { time: string; bps: number }[] };
  trafficUsage: { resourceId: string; totalBytes: number; items: { date: string; bytes: number }[] };
  resources: Connection<ResourceNode>;
  customerBalance: BalanceNode;
  transactions: Connection<TransactionNode>;
  statement: StatementNode & { csv: string | null };
  apiKey: { id: string; scopes: string[] };
}

const yuan = (money: { amount: string } | null | undefined) => (money ? yuanNumber(money) : null);
const lower = (value: string | null | undefined) => (value == null ? null : value.toLowerCase());

/** REST shapes of docs/architecture.md §8. */
export const cloudShapes = {
  vendor: (v: VendorNode) => ({ vendor_id: v.id, name: v.name, status: lower(v.status) }),
  product: (p: ProductNode) => ({
    product_id: p.id,
    vendor_id: p.vendor.id,
    category: p.category,
    name: p.name,
    description: p.description ?? null,
    status: lower(p.status),
    billing_cycles: p.billingCycles.map((c) => ({ cycle: c.cycle, months: c.months, price: yuan(c.price) })),
    stock: p.stock ?? null,
    required_fields: p.requiredFields,
  }),
  order: (o: OrderNode) => ({
    order_id: o.id,
    client_order_no: o.clientOrderNo,
    product_id: o.product.id,
    quantity: o.quantity,
    billing_cycle: o.billingCycle,
    customer: { customer_id: o.customer.customerId, contact: o.customer.contact ?? null },
    metadata: o.metadata,
    amount: yuan(o.amount),
    payment_status: lower(o.paymentStatus),
    provisioning_status: lower(o.provisioningStatus),
    status: lower(o.status),
    resource_id: o.resource?.id ?? null,
    failure_reason: o.failureReason ?? null,
    created_at: o.createdAt,
    updated_at: o.updatedAt,
  }),
  resource: (r: ResourceNode) => ({
    resource_id: r.id,
    order_id: r.order.id,
    product_id: r.product.id,
    customer_id: r.customerId,
    status: r.status,
    expires_at: r.expiresAt,
  }),
  domain: (d: DomainNode) => ({
    domain: d.domain,
    cname: d.cname,
    review_status: d.reviewStatus,
    resolution_status: d.resolutionStatus,
    certificate_status: d.certificateStatus,
    acceleration_status: d.accelerationStatus,
    error_status: d.errorStatus,
    origin: { type: d.origin.type, address: d.origin.address, port: d.origin.port ?? null },
    protocol: d.protocol,
    order_id: d.order.id,
    customer_id: d.customerId,
  }),
  purge: (p: PurgeNode) => ({
    task_id: p.id,
    domain: p.domain,
    type: p.type,
    targets: p.targets,
    status: p.status,
    created_at: p.createdAt,
    completed_at: p.completedAt ?? null,
  }),
  transaction: (t: TransactionNode) => ({
    transaction_id: t.id,
    customer_id: t.customerId,
    order_id: t.order?.id ?? null,
    type: lower(t.type),
    amount: yuan(t.amount),
    balance_after: yuan(t.balanceAfter),
    created_at: t.createdAt,
  }),
  balance: (b: BalanceNode) => ({
    customer_id: b.customerId,
    available: yuan(b.available),
    frozen: yuan(b.frozen),
    credit_line: yuan(b.creditLine),
    currency: b.currency,
  }),
  statement: (s: StatementNode) => ({
    statement_id: s.id,
    period: s.period,
    total_amount: yuan(s.totalAmount),
    items: s.items.map((i) => ({
      transaction_id: i.transactionId,
      customer_id: i.customerId,
      order_id: i.orderId ?? null,
      type: lower(i.type),
      amount: yuan(i.amount),
      created_at: i.createdAt,
    })),
    export_status: s.exportStatus,
    export_url: s.exportUrl ?? null,
  }),
};
