// Step 2 of a delivery: the exact request a receiver gets. Pure (bodies are memoized): endpoint, event, signing keys,
// receiver-auth headers and the moment of sending in, method-less request out. Signed at send
// time, so `webhook-timestamp` is this attempt's and a retry is never "too old".
import { LRUCache } from "lru-cache";
import type { QueueEndpoint, QueueEvent } from "../repos/deliveries-queue.repo.js";
import { serializePayload } from "./payload.js";
import type { SendRequest } from "./sender.js";
import { legacySignature, signWithKeys } from "./signing.js";

/** An endpoint's signing material, decoded once per secret rather than once per request. */
export interface SigningKeys {
  /** HMAC keys: the current secret's first, then the previous one's during a rotation's grace period */
  keys: Buffer[];
  /** `previous_secret_expires_at`: the previous key is dropped from then on */
  previousUntil: Date | null;
  /** the current secret string, for `x-signature-256` when the endpoint asks for it */
  legacySecret: string | null;
}

export type PrepareEndpoint = Pick<
  QueueEndpoint,
  "url" | "legacy_signature" | "payload_fields" | "payload_result_format" | "payload_responses_filter" | "payload_include_informational"
>;

export interface PrepareInput {
  endpoint: PrepareEndpoint;
  event: QueueEvent;
  signing: SigningKeys;
  /** receiver authentication headers (receiver-auth.ts); ours win over them */
  authHeaders: Readonly<Record<string, string>>;
  at: Date;
  bodies: PayloadCache;
}

/** Bodies kept per dispatcher: enough for every row a claim can hold, a few KB each. */
export const BODY_CACHE_SIZE = 256;

/** The bodies an engine has serialized, by event and payload settings. */
export interface PayloadCache {
  bodyOf(endpoint: PrepareEndpoint, event: QueueEvent): string;
}

/**
 * An event's body per distinct payload setting: the endpoints of a fan-out usually share their
 * settings, so each event is serialized once. Keyed by the event's id, not the loaded object:
 * the endpoints of one event are claimed in different claims, each loading its own copy, and an
 * event never changes once stored. One cache per dispatcher, so two engines in one process (on
 * two databases) never share a body.
 */
export function createPayloadCache(max = BODY_CACHE_SIZE): PayloadCache {
  const bodies = new LRUCache<string, string>({ max });
  return {
    bodyOf(endpoint, event) {
      const settings = {
        fields: endpoint.payload_fields,
        result_format: endpoint.payload_result_format,
        responses_filter: endpoint.payload_responses_filter,
        include_informational: endpoint.payload_include_informational,
      };
      const key = `${event.id}|${settings.fields.join(",")}|${settings.result_format}|${settings.responses_filter}|${settings.include_informational}`;
      let body = bodies.get(key);
      if (body === undefined) bodies.set(key, (body = serializePayload(event, settings)));
      return body;
    },
  };
}

export function prepare({ endpoint, event, signing, authHeaders, at, bodies }: PrepareInput): SendRequest {
  const body = bodies.bodyOf(endpoint, event);
  const timestamp = Math.floor(at.getTime() / 1000);
  const keys = signing.previousUntil && signing.previousUntil <= at ? signing.keys.slice(0, 1) : signing.keys;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(authHeaders)) headers[name.toLowerCase()] = value;
  // Ours are set last: stored receiver headers can never replace the signature or the type.
  headers["content-type"] = "application/json";
  headers["webhook-id"] = event.id;
  headers["webhook-timestamp"] = String(timestamp);
  headers["webhook-signature"] = signWithKeys({ id: event.id, timestamp, body, keys });
  if (endpoint.legacy_signature && signing.legacySecret) headers["x-signature-256"] = legacySignature(signing.legacySecret, body);
  return { url: endpoint.url, headers, body };
}
