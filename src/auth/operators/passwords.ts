/**
 * Operator passwords (issue 23 §1): hashed with argon2id from node:crypto (Node 24.7+; no
 * package), stored as a PHC string `$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>` (OWASP's
 * minimum for argon2id), so the parameters can be raised later while old hashes still verify.
 * Where `crypto.argon2` is missing, scrypt (node:crypto) with N=2^15, r=8, p=1:
 * `$scrypt$ln=15,r=8,p=1$<salt>$<hash>`.
 */
import crypto from "node:crypto";
import { promisify } from "node:util";

/** Shortest password accepted (NIST SP 800-63B: at least 8; we ask 12 of an operator). */
export const MIN_PASSWORD_LENGTH = 12;
/** Longest password accepted (bounds the work of one guess). */
export const MAX_PASSWORD_LENGTH = 256;

type Argon2 = (
  algorithm: "argon2id",
  parameters: { message: string | Buffer; nonce: Buffer; parallelism: number; tagLength: number; memory: number; passes: number },
  callback: (error: Error | null, derived: Buffer) => void,
) => void;
const argon2 = (crypto as unknown as { argon2?: Argon2 }).argon2;
const argon2Async = argon2 ? promisify(argon2) : null;
const scryptAsync = promisify(crypto.scrypt) as (password: string, salt: Buffer, keylen: number, options: crypto.ScryptOptions) => Promise<Buffer>;

const ARGON2 = { memory: 19456, passes: 2, parallelism: 1, tagLength: 32 };
const SCRYPT = { ln: 15, r: 8, p: 1 };

const b64 = (buffer: Buffer) => buffer.toString("base64").replace(/=+$/, "");

/**
 * Hashes a password for storage.
 * @returns the PHC string (salt of 16 random bytes)
 */
export async function hashPassword(password: string): Promise<string> {
  const salt = crypto.randomBytes(16);
  if (argon2Async) {
    const hash = await argon2Async("argon2id", { message: password, nonce: salt, ...ARGON2 });
    return `$argon2id$v=19$m=${ARGON2.memory},t=${ARGON2.passes},p=${ARGON2.parallelism}$${b64(salt)}$${b64(hash)}`;
  }
  const hash = await scryptAsync(password, salt, 32, { N: 2 ** SCRYPT.ln, r: SCRYPT.r, p: SCRYPT.p, maxmem: 64 * 1024 * 1024 });
  return `$scrypt$ln=${SCRYPT.ln},r=${SCRYPT.r},p=${SCRYPT.p}$${b64(salt)}$${b64(hash)}`;
}

/** A hash nothing matches, verified when the account is unknown so both cases take as long. */
let decoy: Promise<string> | undefined;

/**
 * Checks a password against a stored hash in constant time. With no hash (unknown account, or an
 * operator without a password) it verifies against a decoy, so timing tells nothing.
 * @returns whether it matches
 */
export async function verifyPassword(password: string, stored: string | null | undefined): Promise<boolean> {
  if (!stored) {
    decoy ??= hashPassword(crypto.randomBytes(24).toString("base64"));
    await verifyPassword(password, await decoy);
    return false;
  }
  const parts = stored.split("$");
  const params = Object.fromEntries((parts[parts.length - 3] ?? "").split(",").map((kv) => kv.split("=")));
  const salt = Buffer.from(parts[parts.length - 2] ?? "", "base64");
  const expected = Buffer.from(parts[parts.length - 1] ?? "", "base64");
  let derived: Buffer;
  if (parts[1] === "argon2id" && argon2Async) {
    derived = await argon2Async("argon2id", {
      message: password,
      nonce: salt,
      memory: Number(params.m),
      passes: Number(params.t),
      parallelism: Number(params.p),
      tagLength: expected.length,
    });
  } else if (parts[1] === "scrypt") {
    derived = await scryptAsync(password, salt, expected.length, {
      N: 2 ** Number(params.ln),
      r: Number(params.r),
      p: Number(params.p),
      maxmem: 64 * 1024 * 1024,
    });
  } else return false;
  return derived.length === expected.length && crypto.timingSafeEqual(derived, expected);
}
