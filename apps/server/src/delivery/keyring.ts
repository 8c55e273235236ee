// Signing keys per endpoint, opened (AES-GCM) and decoded once per secret instead of once per
// request. An entry is replaced as soon as the endpoint's stored secrets differ (a rotation), and
// dropped when the endpoint changes (endpoint-changes.ts) or is the least recently used of
// MAX_ENTRIES.
import { LRUCache } from "lru-cache";
import type { SecretBox } from "../lib/secret-box.js";
import type { QueueEndpoint } from "../repos/deliveries-queue.repo.js";
import type { SigningKeys } from "./prepare.js";
import { signingKey } from "./signing.js";

export type KeyringEndpoint = Pick<QueueEndpoint, "id" | "secret_enc" | "previous_secret_enc" | "previous_secret_expires_at">;

export interface Keyring {
  keysFor(endpoint: KeyringEndpoint): SigningKeys;
  forget(endpointId: string): void;
}

const MAX_ENTRIES = 10_000;

export function createKeyring(secretBox: SecretBox): Keyring {
  const cache = new LRUCache<string, { current: Uint8Array; previous: Uint8Array | null; previousUntil: number | null; keys: SigningKeys }>({ max: MAX_ENTRIES });
  const same = (a: Uint8Array | null, b: Uint8Array | null) => a === b || (a !== null && b !== null && Buffer.compare(a, b) === 0);
  return {
    keysFor(ep) {
      const previousUntil = ep.previous_secret_expires_at?.getTime() ?? null;
      const hit = cache.get(ep.id);
      if (hit && same(hit.current, ep.secret_enc) && same(hit.previous, ep.previous_secret_enc) && hit.previousUntil === previousUntil) return hit.keys;
      const current = secretBox.open(ep.secret_enc);
      const keys: SigningKeys = {
        keys: [signingKey(current)],
        previousUntil: ep.previous_secret_expires_at,
        legacySecret: current,
      };
      // Receivers may still only know the previous secret until its grace period ends.
      if (ep.previous_secret_enc && ep.previous_secret_expires_at) keys.keys.push(signingKey(secretBox.open(ep.previous_secret_enc)));
      cache.set(ep.id, { current: Buffer.from(ep.secret_enc), previous: ep.previous_secret_enc && Buffer.from(ep.previous_secret_enc), previousUntil, keys });
      return keys;
    },
    forget: (endpointId) => void cache.delete(endpointId),
  };
}
