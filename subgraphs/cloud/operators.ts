/**
 * Operators, console sign-in and the audit log in the cloud subgraph (issue 23 §1;
 * docs/adr/0022-operators-and-audit.md). The role check of each field is
 * subgraphs/shared/admin-access.ts `guardAdminFields`; `adminSignIn` is the one admin field
 * without it: it runs only with the session id the router's sign-in route states.
 */
import { AppError } from "../../src/errors.ts";
import { listAudit, type AuditEntry } from "../../src/audit/log.ts";
import { adminFieldsOf } from "../../src/auth/operators/roles.ts";
import { SESSION_ID_PATTERN } from "../../src/auth/operators/sessions.ts";
import { createOperator, listOperators, setOperatorStatus, type Operator } from "../../src/auth/operators/store.ts";
import { pageOf, toConnection } from "../shared/connection.ts";
import type { CloudContext } from "./context.ts";

/** An operator in the shape of the `Operator` type. */
function operatorOf(operator: Pick<Operator, "id" | "email" | "role"> & Partial<Operator>) {
  return {
    id: operator.id,
    email: operator.email,
    role: operator.role.toUpperCase(),
    status: (operator.status ?? "active").toUpperCase(),
    createdAt: operator.createdAt ?? null,
  };
}

const auditEntryOf = (entry: AuditEntry) => ({
  ...entry,
  id: String(entry.id),
  role: entry.role?.toUpperCase() ?? null,
  ledgerEntryId: entry.ledgerEntryId == null ? null : String(entry.ledgerEntryId),
});

/** `Query` resolvers of operators and the audit log. */
export const operatorQueries = {
  adminMe: async (_: unknown, __: unknown, ctx: CloudContext) => {
    const me = await ctx.requireAdmin();
    return {
      operatorId: me.operatorId,
      actor: me.actor,
      role: me.role.toUpperCase(),
      via: me.via.toUpperCase().replace("-", "_"),
      allowedFields: adminFieldsOf(me.role),
    };
  },
  adminOperators: async (_: unknown, __: unknown, ctx: CloudContext) => (await listOperators(ctx.db)).map(operatorOf),
  adminAuditLog: async (
    _: unknown,
    args: {
      first?: number | null;
      after?: string | null;
      operatorId?: string | null;
      actor?: string | null;
      objectType?: string | null;
      objectId?: string | null;
      since?: string | Date | null;
      until?: string | Date | null;
    },
    ctx: CloudContext,
  ) => {
    const iso = (value: string | Date | null | undefined) => (value instanceof Date ? value.toISOString() : (value ?? null));
    const page = await listAudit(
      ctx.db,
      { operatorId: args.operatorId, actor: args.actor, objectType: args.objectType, objectId: args.objectId, since: iso(args.since), until: iso(args.until) },
      pageOf(args),
    );
    return toConnection({ ...page, items: page.items.map(auditEntryOf) });
  },
};

/** `Mutation` resolvers of sign-in, sign-out and operator changes. */
export const operatorMutations = {
  adminSignIn: async (_: unknown, { input }: { input: { email: string; password: string } }, ctx: CloudContext) => {
    const sessionId = ctx.sessionFacts.newSession;
    if (!sessionId || !SESSION_ID_PATTERN.test(sessionId)) throw new AppError("forbidden", "Sign in through POST /admin/session");
    const signedIn = await ctx.operatorAuth.signIn(ctx.db, {
      email: input.email,
      password: input.password,
      sessionId,
      clientIp: ctx.sessionFacts.clientIp,
      requestId: ctx.requestId,
    });
    return { operator: operatorOf(signedIn.operator), expiresAt: signedIn.expiresAt };
  },
  adminSignOut: async (_: unknown, __: unknown, ctx: CloudContext) => {
    const session = ctx.sessionFacts.session;
    const me = await ctx.requireAdmin();
    return { ended: me.via === "session" && session ? await ctx.operatorAuth.signOut(ctx.db, session) : false };
  },
  adminCreateOperator: async (_: unknown, { input }: { input: { email: string; role: string; password?: string | null } }, ctx: CloudContext) => ({
    operator: operatorOf(await createOperator(ctx.db, ctx.auditActor(), { email: input.email, role: input.role.toLowerCase(), password: input.password })),
  }),
  adminSetOperatorStatus: async (_: unknown, { input }: { input: { id: string; status: string } }, ctx: CloudContext) => {
    const status = input.status.toLowerCase();
    if (status !== "active" && status !== "disabled") throw new AppError("validation_failed", "status must be ACTIVE or DISABLED", { field: "status" });
    return { operator: operatorOf(await setOperatorStatus(ctx.db, ctx.auditActor(), input.id, status)) };
  },
};
