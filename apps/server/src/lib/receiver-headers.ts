// The one list of header names a delivery's stored receiver headers may not use. The service
// refuses them when an endpoint is created or updated, and the sender never sends a stored value
// for the transport's own, so an endpoint holds only headers that really are sent. The contract
// (`AuthenticationHeadersInput`) names the same list; a test keeps the two equal.

/** Framing and routing headers: the HTTP client's job; a stored header set must never override them. */
export const TRANSPORT_HEADERS: ReadonlySet<string> = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "expect",
  "te",
  "trailer",
  "proxy-connection",
  "user-agent",
]);

/** Set by every delivery itself (the body's type and the signatures). */
const DELIVERY_HEADERS: ReadonlySet<string> = new Set(["content-type", "x-signature-256"]);

/** Whether a receiver header name (any case) is reserved: the transport's, a delivery's own, or `webhook-*`. */
export function isReservedHeaderName(name: string): boolean {
  const lower = name.toLowerCase();
  return TRANSPORT_HEADERS.has(lower) || DELIVERY_HEADERS.has(lower) || lower.startsWith("webhook-");
}

/** Every reserved name spelled out (the `webhook-` prefix as `webhook-*`), for docs and tests. */
export const RESERVED_HEADER_NAMES: readonly string[] = [...TRANSPORT_HEADERS, ...DELIVERY_HEADERS, "webhook-*"];
