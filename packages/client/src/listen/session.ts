// A listen session (`ars-listen`): registers a webhook listener, holds its stream open (and opens
// it again when it drops), forwards every delivery to the local receiver and reports each answer
// back, so the server records the attempt like any other. A stream can also die without closing
// (a proxy or a sleeping laptop keeps a dead connection open): the server sends a keep-alive
// every 10 seconds, so a stream silent for `idleTimeoutMs` is taken for dropped and opened again,
// and each drop and each reconnect is reported (stripe-cli users report a `listen` that silently
// stops forwarding).
import type { CreatedWebhookEndpoint, CreateWebhookListenerRequest } from "@audit-review/api-types";
import { createParser } from "eventsource-parser";
import { createClient, type AuditReviewClient } from "../client.js";
import { ApiError } from "../errors.js";
import { forward, type LocalAnswer, type StreamedRequest } from "./forward.js";

export interface ListenOptions {
  apiUrl: string;
  token: string;
  /** the local receiver, e.g. http://localhost:4242/webhooks */
  forwardTo: string;
  listener?: CreateWebhookListenerRequest;
  /** how long the local receiver may take (the server waits 15 s for the whole round trip) */
  timeoutMs?: number;
  /** a stream that brings nothing, not even a keep-alive, for this long is taken for dropped (30 s) */
  idleTimeoutMs?: number;
  signal: AbortSignal;
  /** extra fetch options (tests) */
  fetch?: typeof fetch;
}

export interface ListenEvents {
  /** The listener is registered (again, when it had been deleted meanwhile). */
  registered(listener: CreatedWebhookEndpoint): void;
  /** The stream is open: the first time, or `again` after it had dropped. */
  connected(listenerId: string, again: boolean): void;
  /** One delivery forwarded: what was sent and what the receiver answered. */
  delivered(req: StreamedRequest, answer: LocalAnswer): void;
  /** The stream dropped (or could not be opened); it is opened again after `retryInMs`. */
  disconnected(reason: string, retryInMs: number): void;
}

const RECONNECT_MIN_MS = 500;
/** Three of the server's 10-second keep-alives missed. */
export const DEFAULT_IDLE_TIMEOUT_MS = 30_000;
const RECONNECT_MAX_MS = 10_000;

export async function createListener(client: AuditReviewClient, body: CreateWebhookListenerRequest = {}): Promise<CreatedWebhookEndpoint> {
  const { data, error, response } = await client.raw.POST("/v2/webhook_listeners", { body });
  if (!data) throw ApiError.fromResponse(response, error, { method: "POST", url: response.url || "/v2/webhook_listeners" });
  return data;
}

/** The reason of a `closed` event (the server ended the stream). */
function parseReason(data: string): string {
  try {
    const reason: unknown = Reflect.get(Object(JSON.parse(data)), "reason");
    return typeof reason === "string" ? reason : "no reason given";
  } catch {
    return "no reason given";
  }
}

function parseRequest(data: string): StreamedRequest | null {
  try {
    const v: unknown = JSON.parse(data);
    if (typeof v !== "object" || v === null) return null;
    const request_id: unknown = Reflect.get(v, "request_id");
    const headers: unknown = Reflect.get(v, "headers");
    const body: unknown = Reflect.get(v, "body");
    if (typeof request_id !== "string" || typeof body !== "string" || typeof headers !== "object" || headers === null) return null;
    const flat: Record<string, string> = {};
    for (const [k, val] of Object.entries(headers)) if (typeof val === "string") flat[k] = val;
    return { request_id, headers: flat, body };
  } catch {
    return null;
  }
}

/**
 * Runs until `signal` aborts: then the listener is deleted, so it stops counting toward the
 * endpoint limit and its queued deliveries end now rather than after the grace period.
 */
export async function listen(o: ListenOptions, on: ListenEvents): Promise<void> {
  const doFetch = o.fetch ?? fetch;
  const client = createClient({ baseUrl: o.apiUrl, token: o.token, fetch: (req) => doFetch(req) });
  const timeoutMs = o.timeoutMs ?? 14_000;
  const idleTimeoutMs = o.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  let connections = 0;
  let listener = await createListener(client, o.listener);
  on.registered(listener);
  let delay = RECONNECT_MIN_MS;
  const answers = new Set<Promise<void>>();

  async function handle(req: StreamedRequest): Promise<void> {
    const answer = await forward(o.forwardTo, req, timeoutMs);
    on.delivered(req, answer);
    const path = "/v2/webhook_listeners/{listener_id}/answers";
    // a lost answer is the server's timeout: the delivery is retried, nothing is lost
    await client.raw.POST(path, { params: { path: { listener_id: listener.id } }, body: answer }).catch(() => undefined);
  }

  /** One connection of the stream, until it ends; resolves with why. */
  async function stream(): Promise<string> {
    // this connection's own abort: the watchdog below ends a silent one without stopping the session
    const connection = new AbortController();
    const stopSession = () => connection.abort();
    o.signal.addEventListener("abort", stopSession, { once: true });
    try {
      return await streamOnce(connection);
    } finally {
      o.signal.removeEventListener("abort", stopSession);
      connection.abort();
    }
  }

  async function streamOnce(connection: AbortController): Promise<string> {
    const res = await doFetch(new URL(`/v2/webhook_listeners/${listener.id}/stream`, o.apiUrl), {
      headers: { authorization: `Bearer ${o.token}`, accept: "text/event-stream" },
      signal: connection.signal,
    });
    if (res.status === 404) {
      await res.body?.cancel();
      // deleted after its grace period (the stream was gone too long): a new one signs alike
      listener = await createListener(client, o.listener);
      on.registered(listener);
      return "the listener had been deleted; registered a new one";
    }
    if (!res.ok || !res.body) {
      const text = await res.text().catch(() => "");
      if (res.status === 401 || res.status === 403 || res.status === 400) throw new Error(`the server refused the stream (${res.status}): ${text}`);
      return `the server answered ${res.status}`;
    }
    on.connected(listener.id, connections++ > 0);
    delay = RECONNECT_MIN_MS;
    let closedBecause: string | null = null;
    const parser = createParser({
      onEvent(event) {
        if (event.event === "closed") closedBecause = parseReason(event.data);
        if (event.event !== "delivery") return;
        const req = parseRequest(event.data);
        if (!req) return;
        const run = handle(req).finally(() => answers.delete(run));
        answers.add(run);
      },
    });
    const decoder = new TextDecoder();
    const reader = res.body.getReader();
    let silent = false;
    let watchdog: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => {
        silent = true;
        connection.abort();
      }, idleTimeoutMs);
    };
    try {
      arm();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return closedBecause ? `the server ended the stream: ${closedBecause}` : "the server closed the stream";
        arm();
        parser.feed(decoder.decode(value, { stream: true }));
      }
    } catch (err) {
      if (o.signal.aborted) return "stopped";
      if (silent) return `nothing from the server for ${Math.round(idleTimeoutMs / 1000)} s, not even a keep-alive: the connection is taken for dropped`;
      return err instanceof Error ? err.message : String(err);
    } finally {
      clearTimeout(watchdog);
    }
  }

  try {
    while (!o.signal.aborted) {
      let why: string;
      try {
        why = await stream();
      } catch (err) {
        if (o.signal.aborted) break;
        if (err instanceof Error && err.message.startsWith("the server refused")) throw err;
        why = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
      }
      if (o.signal.aborted) break;
      on.disconnected(why, delay);
      await new Promise((resolve) => {
        const t = setTimeout(resolve, delay);
        o.signal.addEventListener("abort", () => (clearTimeout(t), resolve(undefined)), { once: true });
      });
      delay = Math.min(delay * 2, RECONNECT_MAX_MS);
    }
  } finally {
    await Promise.allSettled([...answers]);
    await client.deleteWebhookEndpoint(listener.id).catch(() => undefined);
  }
}
