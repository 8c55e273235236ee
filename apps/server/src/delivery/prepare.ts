// Step 2 of a delivery: the exact request a receiver gets. Pure: endpoint, event, signing keys,
// receiver-auth headers and the moment of sending in, method-less request out. Signed at send
// time, so `webhook-timestamp` is this attempt's and a retry is never "too old".
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
}

// Bodies of one event per distinct payload setting: the endpoints of a fan-out usually share
// their settings, so a batch serialises each event once. Keyed weakly: it lives as long as the
// event object the batch loaded.
const bodies = new WeakMap<QueueEvent, Map<string, string>>();

export function payloadOf(endpoint: PrepareEndpoint, event: QueueEvent): string {
  const settings = {
    fields: endpoint.payload_fields,
    result_format: endpoint.payload_result_format,
    responses_filter: endpoint.payload_responses_filter,
    include_informational: endpoint.payload_include_informational,
  };
  const key = `${settings.fields.join(",")}|${settings.result_format}|${settings.responses_filter}|${settings.include_informational}`;
  let perEvent = bodies.get(event);
  if (!perEvent) bodies.set(event, (perEvent = new Map()));
  let body = perEvent.get(key);
  if (body === undefined) perEvent.set(key, (body = serializePayload(event, settings)));
  return body;
}

export function prepare({ endpoint, event, signing, authHeaders, at }: PrepareInput): SendRequest {
  const body = payloadOf(endpoint, event);
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
