// Receiver credentials are write-only, but a receiver may echo what it got (headers, the Basic
// pair decoded, a token) in its answer, and the first 1 KiB of that answer is stored and shown to
// any `webhooks:read` token. Before it is stored, every secret the sender put on the request is
// cut out of it, in each spelling an echo would use. Pure: secrets and text in, text out.
import { RESPONSE_PREVIEW_BYTES } from "./sender.js";

export const REDACTED = "[REDACTED]";

/**
 * Shorter values are left alone: they cannot be a credential worth the name, and cutting every
 * occurrence of, say, `1` would destroy the preview.
 */
export const MIN_REDACTED_LENGTH = 4;

/** The spellings of one secret an echo may contain: as sent, base64, percent- and form-encoded, JSON-escaped. */
function spellings(secret: string): string[] {
  const json = JSON.stringify(secret).slice(1, -1);
  return [
    secret,
    Buffer.from(secret, "utf8").toString("base64"),
    Buffer.from(secret, "utf8").toString("base64url"),
    encodeURIComponent(secret),
    new URLSearchParams({ x: secret }).toString().slice(2),
    json,
    JSON.stringify(json).slice(1, -1),
  ];
}

/**
 * Every form to cut for these secrets, longest first (so a secret containing another is cut
 * whole). `secrets` are the values as the sender used them: header values, the Basic password and
 * `user:password` pair, a bearer token, a client secret.
 */
export function redactionForms(secrets: readonly string[]): string[] {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < MIN_REDACTED_LENGTH) continue;
    for (const s of spellings(secret)) if (s.length >= MIN_REDACTED_LENGTH) forms.add(s);
  }
  return [...forms].sort((a, b) => b.length - a.length);
}

/**
 * The preview with every form cut out. A preview is cut at RESPONSE_PREVIEW_BYTES, which may fall
 * inside a secret: when the text is that long, a tail that begins one of the forms is cut too.
 */
export function redactPreview(text: string, forms: readonly string[]): string {
  if (forms.length === 0) return text;
  let out = text;
  for (const form of forms) if (out.includes(form)) out = out.split(form).join(REDACTED);
  // the preview was cut (a character split at the limit may have been dropped: up to 3 bytes)
  if (Buffer.byteLength(text, "utf8") >= RESPONSE_PREVIEW_BYTES - 3) {
    let cut = 0;
    for (const form of forms) {
      for (let n = Math.min(form.length - 1, out.length); n > cut; n--) {
        if (out.endsWith(form.slice(0, n))) {
          cut = n;
          break;
        }
      }
    }
    if (cut > 0) out = out.slice(0, out.length - cut) + REDACTED;
  }
  return out;
}
