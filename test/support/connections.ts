/**
 * Every paginated entry point of the graph and the cloud REST API (docs/architecture.md §7): the
 * lists that take a `cursor` and the connections of both subgraphs (admin ones included) that take
 * `after`, each as a query with `$after`, for the tests that throw cursors at all of them
 * (test/integration/strict-input.test.ts, test/fuzz/cursors.test.ts). The data they read is the
 * caller's: `cust-a` names a customer with transactions.
 */

/** Every list of the cloud REST API that takes `cursor`. */
export const REST_LISTS = ["/vendors", "/products", "/orders", "/resources", "/billing/transactions?customer_id=cust-a"];

/**
 * Every connection of both subgraphs: the schema field (`Type.field`), the query (with `$after`),
 * whether the admin token reads it, and where its connection is in the answer.
 */
export const CONNECTIONS: { name: string; field: string; query: string; admin?: boolean; pick: (data: any) => any }[] = [
  { name: "tasks", field: "Query.tasks", query: "query($after: String) { tasks(first: 1, after: $after) { edges { cursor } } }", pick: (d) => d.tasks },
  {
    name: "viewer.tasks",
    field: "Account.tasks",
    query: "query($after: String) { viewer { tasks(first: 1, after: $after) { edges { cursor } } } }",
    pick: (d) => d.viewer.tasks,
  },
  { name: "vendors", field: "Query.vendors", query: "query($after: String) { vendors(first: 1, after: $after) { edges { cursor } } }", pick: (d) => d.vendors },
  {
    name: "products",
    field: "Query.products",
    query: "query($after: String) { products(first: 1, after: $after) { edges { cursor } } }",
    pick: (d) => d.products,
  },
  {
    name: "Vendor.products",
    field: "Vendor.products",
    query: "query($after: String) { vendors(first: 2) { nodes { products(first: 1, after: $after) { edges { cursor } } } } }",
    pick: (d) => d.vendors.nodes.find((v: any) => v.products.edges.length)?.products ?? d.vendors.nodes[0].products,
  },
  { name: "orders", field: "Query.orders", query: "query($after: String) { orders(first: 1, after: $after) { edges { cursor } } }", pick: (d) => d.orders },
  {
    name: "viewer.orders",
    field: "Account.orders",
    query: "query($after: String) { viewer { orders(first: 1, after: $after) { edges { cursor } } } }",
    pick: (d) => d.viewer.orders,
  },
  {
    name: "resources",
    field: "Query.resources",
    query: "query($after: String) { resources(first: 1, after: $after) { edges { cursor } } }",
    pick: (d) => d.resources,
  },
  {
    name: "viewer.resources",
    field: "Account.resources",
    query: "query($after: String) { viewer { resources(first: 1, after: $after) { edges { cursor } } } }",
    pick: (d) => d.viewer.resources,
  },
  {
    name: "transactions",
    field: "Query.transactions",
    query: 'query($after: String) { transactions(first: 1, after: $after, customerId: "cust-a") { edges { cursor } } }',
    pick: (d) => d.transactions,
  },
  {
    name: "adminApiKeys",
    field: "Query.adminApiKeys",
    admin: true,
    query: "query($after: String) { adminApiKeys(first: 1, after: $after) { edges { cursor } } }",
    pick: (d) => d.adminApiKeys,
  },
  {
    name: "adminCustomerWallets",
    field: "Query.adminCustomerWallets",
    admin: true,
    query: "query($after: String) { adminCustomerWallets(first: 1, after: $after) { edges { cursor } } }",
    pick: (d) => d.adminCustomerWallets,
  },
  {
    name: "adminOrders",
    field: "Query.adminOrders",
    admin: true,
    query: "query($after: String) { adminOrders(first: 1, after: $after) { edges { cursor } } }",
    pick: (d) => d.adminOrders,
  },
  {
    name: "adminWebhookDeliveries",
    field: "Query.adminWebhookDeliveries",
    admin: true,
    query: "query($after: String) { adminWebhookDeliveries(first: 1, after: $after) { edges { cursor } } }",
    pick: (d) => d.adminWebhookDeliveries,
  },
  {
    name: "adminAuditLog",
    field: "Query.adminAuditLog",
    admin: true,
    query: "query($after: String) { adminAuditLog(first: 1, after: $after) { edges { cursor } } }",
    pick: (d) => d.adminAuditLog,
  },
];
