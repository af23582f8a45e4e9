/**
 * The console's session routes (issue 23 §1; docs/adr/0022-operators-and-audit.md; README
 * "Console"). The router has no database: each route runs an admin GraphQL operation on the cloud
 * subgraph through its own gateway, as the REST shims do.
 *
 * - `POST /admin/session` `{email, password}`: makes a 256-bit random session id, has
 *   `adminSignIn` store it (its SHA-256) once the password holds (the id travels in the signed
 *   internal context as `x-switchyard-new-session`, never in a GraphQL answer), then sets it in
 *   the cookie `sy_admin_session` (HttpOnly, SameSite=Strict, Path=/, Secure unless served over
 *   plain http on a loopback address) and answers `{operator, csrfToken, expiresAt, allowedFields}`.
 * - `GET /admin/session`: who the cookie's session is, with its CSRF token (a page reload).
 * - `DELETE /admin/session` (with `X-CSRF-Token`): `adminSignOut` ends the session on the server;
 *   the cookie is cleared.
 *
 * At the edge (router/server.ts) every request's session cookie and `X-CSRF-Token` header become
 * `x-switchyard-session` and `x-switchyard-csrf` in the signed context, so admin GraphQL on
 * `/graphql` sees the session too; every write needs the CSRF token there.
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { csrfTokenOf, SESSION_ID_PATTERN } from "../src/auth/operators/session-token.ts";
import type { Gateway } from "./graph/gateway.ts";
import { runOperation, toShimError } from "./graph/client.ts";
import { isJsonContentType, parseJsonObject, readBody } from "./http/body.ts";
import { sendGenerationError } from "./rest/generation.ts";
import { isAppError } from "../src/errors.ts";

/** The session cookie's name. */
export const SESSION_COOKIE = "sy_admin_session";

/** The session id of a `Cookie` header, or null. */
export function sessionCookieOf(cookie: string | string[] | undefined): string | null {
  const text = Array.isArray(cookie) ? cookie.join("; ") : (cookie ?? "");
  for (const part of text.split(";")) {
    const [name, ...rest] = part.trim().split("=");
    if (name === SESSION_COOKIE) {
      const value = rest.join("=");
      return SESSION_ID_PATTERN.test(value) ? value : null;
    }
  }
  return null;
}

/**
 * Whether the cookie gets `Secure`: always, except a request over plain http to a loopback
 * address (`localhost`, `127.0.0.1`, `[::1]`: development), where a browser would drop it. A
 * request that arrived over TLS, or through a trusted proxy that says `https`, is secure anyway.
 */
function secureCookie(req: IncomingMessage, trustedProto: string | null): boolean {
  if ((req.socket as { encrypted?: boolean }).encrypted || trustedProto === "https") return true;
  const host = String(req.headers.host ?? "").toLowerCase();
  return !/^(localhost|127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?$/.test(host);
}

/** What the routes need of the router. */
export interface SessionRouteDeps {
  gateway: Gateway;
  /** The client's address (TRUST_PROXY applied). */
  clientIp(req: IncomingMessage): string;
  /** `X-Forwarded-Proto` when the peer is a trusted proxy, else null. */
  trustedProto(req: IncomingMessage): string | null;
}

const IDENTITY = "allowedFields role actor operatorId via";

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string | string[]> = {}): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", ...headers });
  res.end(JSON.stringify(body));
}

/** Answers the first GraphQL error of a result as the registry says (status, message, Retry-After). */
function sendFirstError(res: ServerResponse, errors: NonNullable<Awaited<ReturnType<typeof runOperation>>["errors"]>): void {
  const error = toShimError(errors[0]!);
  sendGenerationError(res, { code: error.code, message: error.message, details: error.details });
}

/** Builds the three handlers. */
export function createSessionRoutes(deps: SessionRouteDeps) {
  const call = (req: IncomingMessage, requestId: string, route: string, headers: Record<string, string>) => ({
    requestId,
    route,
    headers: { "x-switchyard-client-ip": deps.clientIp(req), "x-switchyard-count-id": randomUUID(), ...headers },
  });
  const cookie = (req: IncomingMessage, value: string, maxAge: number) =>
    `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${secureCookie(req, deps.trustedProto(req)) ? "; Secure" : ""}`;

  return {
    async signIn({ req, res, requestId }: { req: IncomingMessage; res: ServerResponse; requestId: string }) {
      // JSON only: a cross-site form cannot send it without a CORS preflight (no login CSRF).
      if (!isJsonContentType(req.headers["content-type"])) {
        req.resume();
        return sendGenerationError(res, { code: "unsupported_media_type" });
      }
      let input: Record<string, unknown> | null;
      try {
        input = parseJsonObject(await readBody(req, 16 * 1024));
      } catch (error) {
        return sendGenerationError(res, isAppError(error) ? { code: error.code } : { code: "invalid_request" });
      }
      if (!input || typeof input.email !== "string" || typeof input.password !== "string") {
        return sendGenerationError(res, { code: "invalid_request", message: 'Send {"email": …, "password": …} as JSON' });
      }
      const sessionId = randomBytes(32).toString("base64url");
      const result = await runOperation<{ adminSignIn: { operator: { id: string; email: string; role: string }; expiresAt: string } }>(
        deps.gateway,
        "mutation AdminSignIn($input: AdminSignInInput!) { adminSignIn(input: $input) { operator { id email role } expiresAt } }",
        { input: { email: input.email, password: input.password } },
        call(req, requestId, "POST /admin/session", { "x-switchyard-new-session": sessionId }),
      );
      if (result.errors?.length || !result.data?.adminSignIn) return sendFirstError(res, result.errors ?? [{ message: "Internal error" }]);
      const { operator, expiresAt } = result.data.adminSignIn;
      const me = await runOperation<{ adminMe: Record<string, unknown> }>(
        deps.gateway,
        `query AdminMe { adminMe { ${IDENTITY} } }`,
        {},
        call(req, requestId, "POST /admin/session", { "x-switchyard-session": sessionId }),
      );
      const maxAge = Math.max(0, Math.floor((Date.parse(expiresAt) - Date.now()) / 1000));
      sendJson(
        res,
        200,
        { operator, expiresAt, csrfToken: csrfTokenOf(sessionId), ...(me.data?.adminMe ?? {}) },
        { "set-cookie": cookie(req, sessionId, maxAge) },
      );
    },

    async current({ req, res, requestId }: { req: IncomingMessage; res: ServerResponse; requestId: string }) {
      req.resume();
      const sessionId = sessionCookieOf(req.headers.cookie);
      if (!sessionId) return sendGenerationError(res, { code: "unauthorized", message: "Not signed in" });
      const me = await runOperation<{ adminMe: Record<string, unknown> }>(
        deps.gateway,
        `query AdminMe { adminMe { ${IDENTITY} } }`,
        {},
        call(req, requestId, "GET /admin/session", { "x-switchyard-session": sessionId }),
      );
      if (me.errors?.length || !me.data?.adminMe) return sendFirstError(res, me.errors ?? [{ message: "Internal error" }]);
      sendJson(res, 200, { csrfToken: csrfTokenOf(sessionId), ...me.data.adminMe });
    },

    async signOut({ req, res, requestId }: { req: IncomingMessage; res: ServerResponse; requestId: string }) {
      req.resume();
      const sessionId = sessionCookieOf(req.headers.cookie);
      const clear = { "set-cookie": cookie(req, "", 0) };
      if (!sessionId) return sendJson(res, 200, { ended: false }, clear);
      const csrf = req.headers["x-csrf-token"];
      const result = await runOperation<{ adminSignOut: { ended: boolean } }>(
        deps.gateway,
        "mutation AdminSignOut { adminSignOut { ended } }",
        {},
        call(req, requestId, "DELETE /admin/session", {
          "x-switchyard-session": sessionId,
          ...(typeof csrf === "string" ? { "x-switchyard-csrf": csrf } : {}),
        }),
      );
      if (result.errors?.length) return sendFirstError(res, result.errors);
      sendJson(res, 200, { ended: result.data?.adminSignOut?.ended ?? false }, clear);
    },
  };
}
