/**
 * Channel API keys at rest (README "Channels"; ADR 0012): AES-256-GCM with a key derived from
 * CHANNEL_KEY_SECRET by HKDF-SHA-256, a random 96-bit IV per value. A stored value reads
 * `v1.<iv>.<tag>.<ciphertext>` (base64url); a wrong secret or a changed byte fails the tag check.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

const INFO = "switchyard channel api key v1";

/** Encrypts and decrypts channel keys with one secret. */
export interface KeyBox {
  /** @returns the stored form of `plain` */
  seal(plain: string): string;
  /** @returns the plain key. @throws Error when the value was not sealed with this secret */
  open(sealed: string): string;
}

/**
 * Derives the AES key from the secret.
 * @param secret CHANNEL_KEY_SECRET (any length; validated by src/config.ts)
 */
export function createKeyBox(secret: string): KeyBox {
  const key = Buffer.from(hkdfSync("sha256", Buffer.from(secret, "utf8"), Buffer.alloc(0), INFO, 32));
  return {
    seal(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const data = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
      return ["v1", iv.toString("base64url"), cipher.getAuthTag().toString("base64url"), data.toString("base64url")].join(".");
    },
    open(sealed) {
      const [version, iv, tag, data] = sealed.split(".");
      if (version !== "v1" || !iv || !tag || data === undefined) throw new Error("not a sealed channel key");
      const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"));
      decipher.setAuthTag(Buffer.from(tag, "base64url"));
      return Buffer.concat([decipher.update(Buffer.from(data, "base64url")), decipher.final()]).toString("utf8");
    },
  };
}
