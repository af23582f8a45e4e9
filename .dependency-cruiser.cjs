/**
 * docs/architecture.md §1.2 (dependency direction) as code: `npm run check:boundaries`, part of
 * `npm test`. Each rule names the sentence of §1.2 it checks; change both together (ADR 0024).
 * Type-only imports count (tsPreCompilationDeps), as they do for `npm run check:cycles`.
 */

/** What the router may import from `src/` (§1.2 "router/"): the registry, leaf helpers, data tables, infrastructure. */
const ROUTER_MAY_IMPORT_FROM_SRC = [
  "^src/errors[.]ts$",
  "^src/pagination[.]ts$",
  "^src/names[.]ts$",
  "^src/digest[.]ts$",
  "^src/generation/catalog[.]ts$",
  "^src/net/drain[.]ts$",
  "^src/observability/",
  "^src/generation/media/signed-url[.]ts$",
  "^src/auth/operators/session-token[.]ts$",
  "^src/shared/money[.]js$",
];

/** What the router may import from `subgraphs/` (§1.2): the router↔subgraph contract and the locale rule. */
const ROUTER_MAY_IMPORT_FROM_SUBGRAPHS = [
  "^subgraphs/shared/contract[.]ts$",
  "^subgraphs/shared/internal-context[.]ts$",
  "^subgraphs/shared/locale[.]ts$",
];

/**
 * The REST shims run the services' request checks and the scope check before the GraphQL
 * operation, so a REST caller gets the spec's first error when a type error and a value error meet
 * (ADR 0025), and the REST shapes and OpenAPI documents list the enums of cloud/states.ts (data
 * only). Only these pairs and only from router/rest/ and router/openapi/, so a new one fails
 * (ADR 0024, docs/architecture.md §1.2).
 */
const REST_UNTIL_ONE_SOURCE = {
  from: "^router/(rest|openapi)/",
  to: [
    "^src/cloud/states[.]ts$",
    "^src/cloud/order-request[.]ts$",
    "^src/cloud/domains[.]ts$",
    "^src/cloud/purge[.]ts$",
    "^src/auth/scopes[.]ts$",
    "^src/generation/validation[.]ts$",
  ],
};

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "§1.2 No import cycles, type-only imports included.",
      from: {},
      to: { circular: true },
    },
    {
      name: "no-module-pair-both-ways",
      severity: "error",
      comment: "§1.2 No two modules (folders) import each other, directly or round a circle: one is below the other.",
      scope: "folder",
      from: {},
      to: { circular: true },
    },
    {
      name: "db-imports-no-business-module",
      severity: "error",
      comment: "§1.2 src/db/ is below every business module: knex, migrations (history: they keep the SQL they ran with), backup, claims.",
      from: { path: "^src/db/" },
      to: { path: "^src/(ledger|auth|generation|cloud|events)/" },
    },
    {
      name: "src-imports-nothing-above",
      severity: "error",
      comment: "§1.2 src/ imports nothing from subgraphs/, router/ or bin/.",
      from: { path: "^src/" },
      to: { path: "^(subgraphs|router|bin|scripts|bench|test)/" },
    },
    {
      name: "src-infrastructure-imports-no-business-module",
      severity: "error",
      comment: "§1.2 net/ and observability/ hold no business rule and import no business module.",
      from: { path: "^src/(net|observability)/" },
      to: { path: "^src/(db|ledger|auth|generation|cloud|events)/" },
    },
    {
      name: "subgraphs-import-nothing-above",
      severity: "error",
      comment: "§1.2 router → subgraphs → src: a subgraph imports neither the router nor bin/.",
      from: { path: "^subgraphs/" },
      to: { path: "^(router|bin|scripts|bench|test)/" },
    },
    {
      name: "subgraphs-import-not-each-other",
      severity: "error",
      comment: "§1.2 a subgraph shares code with the other only through subgraphs/shared/.",
      from: { path: "^subgraphs/(generation|cloud)/" },
      to: { path: "^subgraphs/(generation|cloud)/", pathNot: "^subgraphs/$1/" },
    },
    {
      name: "router-imports-no-bin",
      severity: "error",
      comment: "§1.2 bin/stack.ts wires the router; the router never imports bin/.",
      from: { path: "^router/" },
      to: { path: "^(bin|scripts|bench|test)/" },
    },
    {
      name: "router-reaches-src-through-named-modules",
      severity: "error",
      comment: "§1.2 router/ holds no database connection and imports no business module: only the named modules of src/.",
      from: { path: "^router/", pathNot: REST_UNTIL_ONE_SOURCE.from },
      to: { path: "^src/", pathNot: ROUTER_MAY_IMPORT_FROM_SRC },
    },
    {
      name: "router-rest-reaches-src-through-named-modules",
      severity: "error",
      comment: "§1.2 as above, and the REST shims' request checks and enums (REST_UNTIL_ONE_SOURCE).",
      from: { path: REST_UNTIL_ONE_SOURCE.from },
      to: { path: "^src/", pathNot: [...ROUTER_MAY_IMPORT_FROM_SRC, ...REST_UNTIL_ONE_SOURCE.to] },
    },
    {
      name: "router-reaches-subgraphs-through-the-contract",
      severity: "error",
      comment: "§1.2 the router reaches the subgraphs only through GraphQL and the contract of subgraphs/shared/.",
      from: { path: "^router/" },
      to: { path: "^subgraphs/", pathNot: ROUTER_MAY_IMPORT_FROM_SUBGRAPHS },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(node_modules|examples|docs|schema)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".mjs", ".js"] },
  },
};
