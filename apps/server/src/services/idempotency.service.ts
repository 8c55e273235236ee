// Idempotency-Key on every public POST (Stripe's semantics; docs/api-decisions.md#idempotency-key): the rule of what counts
// as the same request, when a key replays, conflicts or is refused. The HTTP layer only captures
// and replays responses; the stored body is sealed because it may carry a signing secret.
import { createHash } from "node:crypto";
import { IdempotencyKeyInUseError, IdempotencyKeyReusedError } from "../lib/errors.js";
import { isRecord } from "../lib/narrow.js";
import type { SecretBox } from "../lib/secret-box.js";
import type { IdempotencyKeysRepo } from "../repos/idempotency-keys.repo.js";

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** JSON with object keys sorted: the same parameters in another order are the same request. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (isRecord(value)) {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

export interface KeptResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A claimed key: the first request runs, then `finish` stores its answer (or frees the key). */
export interface Claim {
  finish(response: KeptResponse): Promise<void>;
  abandon(): Promise<void>;
}

export function idempotencyService(keys: IdempotencyKeysRepo, secretBox: SecretBox) {
  return {
    /**
     * Claims `key` for this request, or answers the response its first use stored. Throws 409
     * while the first use still runs and 422 when the key was used with another request.
     */
    async begin(orgId: string, key: string, request: { method: string; path: string; body: unknown }): Promise<{ claim: Claim } | { replay: KeptResponse }> {
      const keyHash = sha256(key);
      const requestHash = sha256(`${request.method} ${request.path}\n${canonical(request.body ?? null)}`);
      if (await keys.claim(orgId, keyHash, requestHash, IDEMPOTENCY_TTL_MS)) {
        return {
          claim: {
            finish: ({ status, headers, body }) =>
              // a 5xx says nothing about the request: the key is freed so a retry runs again
              status >= 500 ? keys.release(orgId, keyHash) : keys.complete(orgId, keyHash, { status, headers, bodyEnc: secretBox.seal(body) }),
            abandon: () => keys.release(orgId, keyHash),
          },
        };
      }
      const stored = await keys.find(orgId, keyHash);
      // gone between claim and read (expired or released): the client may simply retry
      if (!stored || stored.status !== "completed") throw new IdempotencyKeyInUseError();
      if (stored.request_hash !== requestHash) throw new IdempotencyKeyReusedError();
      const headers = Object.fromEntries(Object.entries(isRecord(stored.response_headers) ? stored.response_headers : {}).map(([name, value]) => [name, String(value)]));
      return {
        replay: {
          status: stored.response_status ?? 200,
          headers,
          body: secretBox.open(stored.response_body_enc ?? new Uint8Array()),
        },
      };
    },
  };
}

export type IdempotencyService = ReturnType<typeof idempotencyService>;
