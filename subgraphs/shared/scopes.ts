/**
 * Type-level scopes (docs/adr/0007-scopes.md; README "Scopes"): a resource's data needs the
 * resource's scope wherever it is reached from — a root field, a link field of another type
 * (`Transaction.order`, `Resource.order`, `viewer.orders`...), a subscription event, or a
 * federation `_entities` call. The rule lives in one table per subgraph (type → scope); this
 * module wraps every field of those types with the check, so a new link field or entry point
 * cannot forget it.
 *
 * - A type's key fields (`id`, `domain`) stay readable with the scope of whatever linked to it:
 *   a transaction's order id is the transaction's own data (the REST shims read `order { id }`).
 * - What a mutation answers (the order it created, the resource it changed) is readable with the
 *   mutation's write scope: the resolver marks it with {@link grantRead}. What links from it is
 *   checked as anywhere else.
 * - A missing scope is the 403 `forbidden` of `ctx.caller(scope)` on the first field read; the
 *   link fields are nullable, so the link becomes null and its siblings survive.
 */
import { defaultFieldResolver, Kind, type DocumentNode, type FieldDefinitionNode, type GraphQLFieldResolver, type GraphQLResolveInfo } from "graphql";
import { ALL_SCOPES } from "../../src/auth/scopes.ts";

/** The scope a type's data needs, and the fields any key that reached it may read. */
export interface TypeScope {
  /** A key scope such as `orders:read`. */
  scope: string;
  /** Fields readable without the scope: the type's key, already known to whoever linked to it. */
  open?: readonly string[];
}

/** What the check needs of a subgraph context. */
export interface ScopedContext {
  /** The caller holding `scope` (subgraphs/shared/auth.ts). @throws AppError 401/403/429 */
  caller(scope?: string): Promise<unknown>;
}

/** Options of {@link scopeTypes}. */
export interface ScopeTypesOptions<C> {
  /** True when the request may read every type without a key scope (the admin token). */
  bypass?: (ctx: C) => boolean;
}

/** What one request's checks know, kept on its context (one property read per field, not two WeakMap lookups). */
interface ScopeState {
  /** Scopes already checked (true) or being checked (the pending check). */
  scopes: Map<string, true | Promise<void>>;
  /** Objects a mutation answered, readable with its write scope; undefined until one is. */
  granted: WeakSet<object> | undefined;
}

/** The context's property holding its {@link ScopeState} (a symbol: no field or spread sees it). */
const STATE = Symbol("scopes");

/** The request's {@link ScopeState}, made on first use. */
function stateOf(ctx: object): ScopeState {
  let state = (ctx as { [STATE]?: ScopeState })[STATE];
  if (!state) {
    state = { scopes: new Map(), granted: undefined };
    Object.defineProperty(ctx, STATE, { value: state, enumerable: false });
  }
  return state;
}

/**
 * Marks what a mutation answers as readable by this request with the mutation's write scope
 * (the resolver has already required that scope).
 * @param ctx the request's context
 * @param value the record the mutation wrote (an order, a domain...); null passes through
 * @returns `value`
 */
export function grantRead<T>(ctx: object, value: T): T {
  if (value && typeof value === "object") {
    const state = stateOf(ctx);
    state.granted ??= new WeakSet();
    state.granted.add(value);
  }
  return value;
}

/**
 * Checks a scope once per request: the first field asks `ctx.caller(scope)`, later fields of the
 * request reuse the answer (synchronously once it passed, so large lists pay no promise per field).
 * @returns undefined when the scope is known to be held, else the pending (or failed) check
 */
function checkScope(ctx: ScopedContext, scopes: Map<string, true | Promise<void>>, scope: string): Promise<void> | undefined {
  const state = scopes.get(scope);
  if (state === true) return undefined;
  if (state) return state;
  const pending = ctx.caller(scope).then(() => {
    scopes.set(scope, true);
  });
  scopes.set(scope, pending);
  return pending;
}

type Resolver = GraphQLFieldResolver<unknown, unknown, Record<string, unknown>>;
type ReferenceResolver = (reference: unknown, ctx: unknown, info: unknown) => unknown;

/** Field names of every definition and extension of `typeName` in the SDL, and whether it is an entity (`@key`). */
function typeOf(typeDefs: DocumentNode, typeName: string): { fields: string[]; entity: boolean } {
  const fields: FieldDefinitionNode[] = [];
  let entity = false;
  for (const definition of typeDefs.definitions) {
    if ((definition.kind === Kind.OBJECT_TYPE_DEFINITION || definition.kind === Kind.OBJECT_TYPE_EXTENSION) && definition.name.value === typeName) {
      fields.push(...(definition.fields ?? []));
      entity ||= (definition.directives ?? []).some((d) => d.name.value === "key");
    }
  }
  return { fields: fields.map((f) => f.name.value), entity };
}

/**
 * Wraps the resolvers of every field of the listed types (and, for entities, their
 * `__resolveReference`) with the type's scope check. Fields without a resolver get the default one, wrapped.
 * @param typeDefs the subgraph's SDL (fields are taken from it, so none is missed)
 * @param resolvers the subgraph's resolver map; not modified
 * @param rules type name → {@link TypeScope}
 * @returns a new resolver map
 * @throws Error at start-up when a rule names a type the SDL lacks or an unknown scope, or a field
 *   resolver is not a function
 */
export function scopeTypes<R extends Record<string, unknown>, C extends ScopedContext>(
  typeDefs: DocumentNode,
  resolvers: R,
  rules: Record<string, TypeScope>,
  options: ScopeTypesOptions<C> = {},
): R {
  const result: Record<string, unknown> = { ...resolvers };
  const bypass = options.bypass ?? (() => false);
  for (const [typeName, rule] of Object.entries(rules)) {
    const { fields, entity } = typeOf(typeDefs, typeName);
    if (fields.length === 0) throw new Error(`scopeTypes: type ${typeName} is not in the SDL`);
    if (!(ALL_SCOPES as readonly string[]).includes(rule.scope)) throw new Error(`scopeTypes: ${typeName} names an unknown scope ${rule.scope}`);
    const own: Record<string, unknown> = { ...((resolvers[typeName] ?? {}) as Record<string, unknown>) };
    const open = new Set(rule.open ?? []);
    for (const field of fields) {
      if (open.has(field)) continue;
      const found = own[field] ?? defaultFieldResolver;
      if (typeof found !== "function") throw new Error(`scopeTypes: ${typeName}.${field} must be a resolver function`);
      const inner = found as Resolver;
      own[field] = (parent: unknown, args: Record<string, unknown>, ctx: C, info: GraphQLResolveInfo) => {
        const state = stateOf(ctx);
        if (bypass(ctx) || (state.granted && parent && typeof parent === "object" && state.granted.has(parent))) return inner(parent, args, ctx, info);
        const pending = checkScope(ctx, state.scopes, rule.scope);
        return pending ? pending.then(() => inner(parent, args, ctx, info)) : inner(parent, args, ctx, info);
      };
    }
    result[typeName] = own;
    if (!entity) continue;
    // `_entities` is an entry point too: without the scope, the reference itself is refused.
    const reference = (own.__resolveReference as ReferenceResolver | undefined) ?? ((ref: unknown) => ref);
    own.__resolveReference = (ref: unknown, ctx: C, info: unknown) => {
      if (bypass(ctx)) return reference(ref, ctx, info);
      const pending = checkScope(ctx, stateOf(ctx).scopes, rule.scope);
      return pending ? pending.then(() => reference(ref, ctx, info)) : reference(ref, ctx, info);
    };
  }
  return result as R;
}
