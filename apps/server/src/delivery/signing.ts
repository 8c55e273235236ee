import { createHmac } from "node:crypto";
import { SECRET_PREFIX } from "../lib/signing-secrets.js";

export { generateSigningSecret, secretHint } from "../lib/signing-secrets.js";

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** The HMAC key of a `whsec_` secret: the bytes its base64 part encodes. */
export function signingKey(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : "";
  if (!BASE64.test(encoded)) {
    // Never include the secret itself in the error.
    throw new TypeError("signing secret must be whsec_ followed by base64");
  }
  return Buffer.from(encoded, "base64");
}

export interface SignatureInput {
  /** webhook-id */
  id: string;
  /** webhook-timestamp, unix seconds */
  timestamp: number | string;
  /** the exact body bytes sent, as a string */
  body: string;
  /** current secret first; during rotation the previous one too */
  secrets: string[];
}

/** Standard Webhooks `webhook-signature`: one space-separated `v1,<base64>` per secret. */
export function signatureHeader({ id, timestamp, body, secrets }: SignatureInput): string {
  if (secrets.length === 0) throw new TypeError("at least one signing secret is required");
  return signWithKeys({ id, timestamp, body, keys: secrets.map(signingKey) });
}

/** The same header from keys decoded once (signingKey), for the engine's hot path. */
export function signWithKeys({ id, timestamp, body, keys }: Omit<SignatureInput, "secrets"> & { keys: readonly Buffer[] }): string {
  if (keys.length === 0) throw new TypeError("at least one signing key is required");
  // signed in two parts: `${id}.${timestamp}.${body}` as one string would copy the body first
  const prefix = `${id}.${timestamp}.`;
  return keys.map((key) => `v1,${createHmac("sha256", key).update(prefix, "utf8").update(body, "utf8").digest("base64")}`).join(" ");
}

/** `x-signature-256` for receivers built against the old scheme: keyed by the secret string itself. */
export function legacySignature(secret: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(body, "utf8").digest("hex")}`;
}
