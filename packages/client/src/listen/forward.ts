// One delivery of a webhook listener's stream, forwarded to the local receiver exactly as an
// HTTPS receiver would get it: POST, the same headers (signature included), the same body.
import type { WebhookListenerAnswer } from "@audit-review/api-types";

/** What the stream's `delivery` event carries. */
export interface StreamedRequest {
  request_id: string;
  headers: Record<string, string>;
  body: string;
}

/** The local receiver's answer, as POST …/answers takes it. */
export type LocalAnswer = WebhookListenerAnswer;

// Framing headers are the local connection's own; fetch refuses or recomputes them.
const HOP_BY_HOP = new Set(["host", "content-length", "connection", "transfer-encoding", "keep-alive"]);
/** What the server keeps of an answer is 1 KiB; a little more travels, never a whole large body. */
const MAX_ANSWER_BODY = 64 * 1024;

function reason(err: unknown): string {
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
  if (!(cause instanceof Error)) return String(cause);
  const code: unknown = Reflect.get(cause, "code");
  return typeof code === "string" && !cause.message.includes(code) ? `${code}: ${cause.message}` : cause.message;
}

/** Sends the request to `url`; never throws: an unreachable or silent receiver is an answer too. */
export async function forward(url: string, req: StreamedRequest, timeoutMs: number): Promise<LocalAnswer> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(name.toLowerCase())) headers[name] = value;
  const started = performance.now();
  const took = () => Math.round(performance.now() - started);
  try {
    const res = await fetch(url, { method: "POST", headers, body: req.body, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    return { request_id: req.request_id, status: res.status, body: text.slice(0, MAX_ANSWER_BODY), duration_ms: took() };
  } catch (err) {
    const timedOut = err instanceof DOMException && err.name === "TimeoutError";
    const message = timedOut ? `${url} did not answer within ${timeoutMs} ms` : `${url}: ${reason(err)}`;
    return { request_id: req.request_id, error: { code: timedOut ? "timeout" : "connection_error", message: message.slice(0, 500) }, duration_ms: took() };
  }
}
