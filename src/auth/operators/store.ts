/**
 * Operator accounts, their API tokens and their console sessions (issue 23 §1;
 * docs/adr/0022-operators-and-audit.md). Passwords are argon2id hashes (passwords.ts); tokens and
 * session ids are 256-bit random values stored as SHA-256 only, shown once. Every change of an
 * operator is written with its audit row (src/audit/log.ts).
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Knex } from "knex";
import { nowIso, isUniqueViolation, type Db } from "../../db/index.ts";
import { newId } from "../../ids.ts";
import { AppError } from "../../errors.ts";
import { audited, type AuditActor } from "../../audit/log.ts";
import { isOperatorRole, type OperatorRole } from "./roles.ts";
import { hashPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from "./passwords.ts";

/** An operator as the admin API and the CLI show it (never a hash). */
export interface Operator {
  id: string;
  email: string;
  role: OperatorRole;
  status: "active" | "disabled";
  createdAt: string;
  updatedAt: string;
}

/** The prefix of every operator API token: `syop_<token id>_<secret>`. */
export const OPERATOR_TOKEN_PREFIX = "syop_";

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,189}$/;

/** SHA-256 hex of a token's secret or a session id: what is stored. */
export function secretDigest(value: string): string {
  return createHash("sha256").update(value, "utf8").digest("hex");
}

/** An operator of its row (the columns of `operators`). */
export const toOperator = (row: Record<string, unknown>): Operator => ({
  id: String(row.id),
  email: String(row.email),
  role: row.role as OperatorRole,
  status: row.status === "disabled" ? "disabled" : "active",
  createdAt: String(row.created_at),
  updatedAt: String(row.updated_at),
});

/**
 * Normalizes an email (trimmed, lower case).
 * @throws AppError `validation_failed` (422, field `email`)
 */
export function checkEmail(email: unknown): string {
  const value = typeof email === "string" ? email.trim().toLowerCase() : "";
  if (!EMAIL.test(value)) throw new AppError("validation_failed", "email must be an email address", { field: "email" });
  return value;
}

/** @throws AppError `validation_failed` (422, field `password`) outside 12-256 characters */
export function checkPassword(password: unknown): string {
  if (typeof password !== "string" || password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH) {
    throw new AppError("validation_failed", `password must have ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`, { field: "password" });
  }
  return password;
}

/**
 * Creates an operator (audited as `operators.create`).
 * @param input email, role, and a password (12-256 characters) or none (token-only operator)
 * @throws AppError `validation_failed` (422: field `email`, `role` or `password`); `conflict` (409) when the email is taken
 */
export async function createOperator(db: Db, actor: AuditActor, input: { email: string; role: string; password?: string | null }): Promise<Operator> {
  const email = checkEmail(input.email);
  if (!isOperatorRole(input.role)) throw new AppError("validation_failed", "role must be one of owner, finance, support, viewer", { field: "role" });
  const role = input.role;
  const passwordHash = input.password == null ? null : await hashPassword(checkPassword(input.password));
  const at = nowIso();
  const row = { id: newId("op"), email, role, password_hash: passwordHash, status: "active", created_at: at, updated_at: at };
  try {
    return await audited(db, actor, { action: "operators.create", objectType: "operator", objectId: row.id }, async (trx) => {
      await trx("operators").insert(row);
      return toOperator(row);
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError("conflict", "An operator with this email exists", { field: "email" });
    throw error;
  }
}

/** Every operator, oldest first (a handful: no paging). */
export async function listOperators(db: Db | Knex.Transaction): Promise<Operator[]> {
  return (await db("operators").orderBy("created_at").orderBy("id")).map(toOperator);
}

/** The operator with this id or email; null when none. */
export async function findOperator(db: Db | Knex.Transaction, idOrEmail: string): Promise<Operator | null> {
  const row = await db("operators").where("id", idOrEmail).orWhere("email", idOrEmail.trim().toLowerCase()).first();
  return row ? toOperator(row) : null;
}

/**
 * Disables or enables an operator (audited). Disabling ends every session of the operator and
 * refuses its tokens from the next request on.
 * @throws AppError `not_found` (404)
 */
export async function setOperatorStatus(db: Db, actor: AuditActor, idOrEmail: string, status: "active" | "disabled"): Promise<Operator> {
  const found = await findOperator(db, idOrEmail);
  if (!found) throw new AppError("not_found", "Operator not found");
  // The audit row's "before" is read inside the audited transaction, so it is the row the write changed.
  let current: Operator = found;
  return audited(
    db,
    actor,
    {
      action: status === "disabled" ? "operators.disable" : "operators.enable",
      objectType: "operator",
      objectId: found.id,
      before: async (trx) => (current = (await findOperator(trx, found.id)) ?? found),
    },
    async (trx) => {
      const at = nowIso();
      const changed = await trx("operators").where("id", found.id).update({ status, updated_at: at });
      if (changed !== 1) throw new AppError("not_found", "Operator not found");
      if (status === "disabled") await trx("operator_sessions").where("operator_id", found.id).whereNull("ended_at").update({ ended_at: at });
      return { ...current, status, updatedAt: at };
    },
  );
}

/** A token just created: the only time its value is shown. */
export interface CreatedOperatorToken {
  id: string;
  operatorId: string;
  name: string;
  /** `syop_<id>_<secret>`: store it now, it cannot be shown again. */
  token: string;
}

/**
 * Creates an API token for an operator (audited; the token is not in the log).
 * @throws AppError `not_found` (404); `validation_failed` (422, field `name`) for a name outside 1-200 characters
 */
export async function createOperatorToken(db: Db, actor: AuditActor, idOrEmail: string, name: string): Promise<CreatedOperatorToken> {
  const found = await findOperator(db, idOrEmail);
  if (!found) throw new AppError("not_found", "Operator not found");
  if (typeof name !== "string" || !name.trim() || name.length > 200)
    throw new AppError("validation_failed", "name must have 1 to 200 characters", { field: "name" });
  const id = newId("opt");
  const secret = randomBytes(32).toString("base64url");
  const row = { id, operator_id: found.id, name: name.trim(), token_hash: secretDigest(secret), created_at: nowIso(), last_used_at: null };
  await audited(
    db,
    actor,
    { action: "operators.token.create", objectType: "operator_token", objectId: id, after: () => ({ id, operatorId: found.id, name: row.name }) },
    async (trx) => {
      await trx("operator_tokens").insert(row);
    },
  );
  return { id, operatorId: found.id, name: row.name, token: `${OPERATOR_TOKEN_PREFIX}${id}_${secret}` };
}

/**
 * Revokes an operator token (audited): it is refused from the next request on.
 * @throws AppError `not_found` (404) for an unknown token id
 */
export async function revokeOperatorToken(db: Db, actor: AuditActor, tokenId: string): Promise<void> {
  await audited(
    db,
    actor,
    {
      action: "operators.token.revoke",
      objectType: "operator_token",
      objectId: tokenId,
      before: async (trx) => (await trx("operator_tokens").where("id", tokenId).first("id", "operator_id", "name", "created_at")) ?? null,
      after: () => null,
    },
    async (trx) => {
      const deleted = await trx("operator_tokens").where("id", tokenId).delete();
      if (!deleted) throw new AppError("not_found", "Operator token not found");
    },
  );
}

/** The id and secret of a presented operator token; null when it is not one. */
export function parseOperatorToken(token: string): { id: string; secret: string } | null {
  const match = /^syop_(opt_[0-9a-z]+)_([A-Za-z0-9_-]{43})$/.exec(token);
  return match ? { id: match[1]!, secret: match[2]! } : null;
}

/** The active operator owning a token, or null (unknown token, wrong secret, disabled operator). */
export async function operatorOfToken(db: Db, token: { id: string; secret: string }): Promise<Operator | null> {
  const row = await db("operator_tokens as t").join("operators as o", "o.id", "t.operator_id").where("t.id", token.id).first("t.token_hash", "o.*");
  if (!row) {
    secretDigest(token.secret);
    return null;
  }
  const same = timingSafeEqual(Buffer.from(secretDigest(token.secret), "hex"), Buffer.from(String(row.token_hash), "hex"));
  if (!same || row.status !== "active") return null;
  return toOperator(row);
}

/** The password hash and operator of an email, for sign-in (null when unknown). */
export async function credentialsOf(db: Db, email: string): Promise<{ operator: Operator; passwordHash: string | null } | null> {
  const row = await db("operators").where("email", email.trim().toLowerCase()).first();
  return row ? { operator: toOperator(row), passwordHash: (row.password_hash as string | null) ?? null } : null;
}
