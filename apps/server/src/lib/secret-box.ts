// Encryption at rest for webhook signing secrets and receiver credentials (AES-256-GCM).
//
// Sealed layout: version (1 byte) | IV (12 bytes) | GCM tag (16 bytes) | ciphertext.
// The version byte lets a later format (or key rotation with a key id) coexist with rows
// written today; GCM's tag makes any tampering or a wrong key fail loudly instead of
// yielding garbage.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { closeSync, linkSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { errorField } from "./narrow.js";

export const ENCRYPTION_KEY_ENV = "ARS_ENCRYPTION_KEY";
export const ENCRYPTION_KEY_FILE = "encryption.key";

const VERSION = 1;
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + IV_BYTES + TAG_BYTES;

export interface SecretBox {
  seal(plaintext: string): Buffer;
  open(sealed: Buffer | Uint8Array): string;
  /** 32 bytes derived from the key for `purpose` (HKDF-SHA256): stable for as long as the key is. */
  derive(purpose: string): Buffer;
}

export function createSecretBox(key: Buffer): SecretBox {
  if (!Buffer.isBuffer(key) || key.length !== KEY_BYTES) {
    throw new Error(`secret box: the encryption key must be exactly ${KEY_BYTES} bytes`);
  }
  // A private copy: later changes to the caller's buffer must not change what we decrypt with.
  const ownKey = Buffer.from(key);

  return {
    derive(purpose) {
      return Buffer.from(hkdfSync("sha256", ownKey, Buffer.alloc(0), `ars:${purpose}`, KEY_BYTES));
    },
    seal(plaintext) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv("aes-256-gcm", ownKey, iv);
      const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), ciphertext]);
    },

    open(sealed) {
      const data = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
      if (data.length < HEADER_BYTES || data[0] !== VERSION) {
        throw new Error("secret box: not a sealed value of a known format");
      }
      const iv = data.subarray(1, 1 + IV_BYTES);
      const tag = data.subarray(1 + IV_BYTES, HEADER_BYTES);
      const decipher = createDecipheriv("aes-256-gcm", ownKey, iv);
      decipher.setAuthTag(tag);
      try {
        return Buffer.concat([decipher.update(data.subarray(HEADER_BYTES)), decipher.final()]).toString("utf8");
      } catch {
        throw new Error("secret box: cannot open sealed value (wrong encryption key or altered data)");
      }
    },
  };
}

/** Decodes a base64 key; the message never contains the value, which is a secret. */
export function parseEncryptionKey(base64: string, source: string): Buffer {
  const text = base64.trim();
  const key = Buffer.from(text, "base64");
  // Buffer.from ignores junk silently; a round trip proves the text was plain base64.
  const canonical = key.toString("base64");
  if (text.length === 0 || canonical.replace(/=+$/, "") !== text.replace(/=+$/, "") || key.length !== KEY_BYTES) {
    throw new Error(
      `${source} must be the base64 encoding of exactly ${KEY_BYTES} random bytes ` +
        `(generate one with: node -e "console.log(require('crypto').randomBytes(32).toString('base64'))")`,
    );
  }
  return key;
}

function isErrno(error: unknown, code: string): boolean {
  return errorField(error, "code") === code;
}

/**
 * Creates `<dataDir>/encryption.key` unless it exists. Written to a private temporary file and
 * then hard-linked into place: linking fails if another process won the race, and nobody can
 * ever read a half-written key.
 */
function createKeyFileIfMissing(path: string): void {
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  const fd = openSync(temporary, "wx", 0o600);
  try {
    writeSync(fd, `${randomBytes(KEY_BYTES).toString("base64")}\n`);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temporary, path);
  } catch (error) {
    if (!isErrno(error, "EEXIST")) throw error;
  } finally {
    unlinkSync(temporary);
  }
}

export interface LoadEncryptionKeyOptions {
  /** The value of ARS_ENCRYPTION_KEY (base64 of 32 bytes); wins when set. */
  envValue?: string | undefined;
  /** Embedded mode: keep the key in `<dataDir>/encryption.key`, creating it on first use. */
  dataDir?: string | undefined;
}

export function loadEncryptionKey(opts: LoadEncryptionKeyOptions): Buffer {
  if (opts.envValue !== undefined && opts.envValue.trim() !== "") {
    return parseEncryptionKey(opts.envValue, ENCRYPTION_KEY_ENV);
  }
  if (opts.dataDir) {
    mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
    const path = join(opts.dataDir, ENCRYPTION_KEY_FILE);
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch (error) {
      if (!isErrno(error, "ENOENT")) throw error;
      createKeyFileIfMissing(path);
      text = readFileSync(path, "utf8");
    }
    return parseEncryptionKey(text, path);
  }
  throw new Error(
    `no encryption key: set ${ENCRYPTION_KEY_ENV} to the base64 encoding of 32 random bytes ` +
      "(or use the embedded database, which keeps a key in its data directory)",
  );
}
