// What the API needs to know about webhook signing secrets: their shape, how a new one is made
// and what reads may show of it. Signing itself is the delivery engine's (delivery/signing.ts).
import { randomBytes } from "node:crypto";

export const SECRET_PREFIX = "whsec_";

export function generateSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64");
}

/** What reads may show of a secret: enough to tell two apart, too little to use. */
export function secretHint(secret: string): string {
  return `${SECRET_PREFIX}…${secret.slice(-4)}`;
}

/**
 * A webhook listener's signing secret: derived from the encryption key, the org and the token
 * that creates the listener, so every listener of one token signs with the same secret (a
 * developer keeps it in the receiver's environment across runs, as with `stripe listen`), and no
 * two tokens share one.
 */
export function listenerSigningSecret(derive: (purpose: string) => Buffer, orgId: string, tokenId: string): string {
  return SECRET_PREFIX + derive(`webhook listener signing secret|${orgId}|${tokenId}`).toString("base64");
}
