// The webhook-listener transport: deliveries to a listener travel down a Server-Sent Events
// stream its client (`ars-listen`) holds open, and the client posts the receiver's answer back.
// It is a transport of the one engine, nothing more: the dispatcher (dispatcher.ts) claims,
// holds, sends and records a listener's deliveries as any other, under the same leases, slots
// and backpressure. What is particular to listeners lives here:
//
// - which listeners' rows this process may claim: those held by the streams it holds
//   (`heldStreams`, the dispatcher's claim filter), so a delivery goes down the stream that is
//   there to take it;
// - the stream's hold on its listener (`listener_connected_until`), renewed every `checkMs` on
//   the engine's clock; a crashed process's hold lapses after `leaseMs`;
// - whether a stream may still run: every `checkMs` it ends when its listener was deleted or
//   disabled, or the token that opened it was revoked or lost `webhooks:write` (README,
//   "Developing a receiver"), and at once when its client stops reading (event-stream.ts);
// - a client that reconnects with the same token takes its listener over at once, in whichever
//   process it lands: its old connection may have died without its process seeing it close;
// - answers: posted to any API process, handed to the attempt waiting in the process that holds
//   the stream, through NOTIFY when that is another process (a payload bounded by construction);
// - listeners whose stream has been gone for the grace period are deleted.
import { randomUUID } from "node:crypto";
import type { WebhookListenerAnswer } from "@audit-review/api-types/internal";
import type { DeliveryConfig } from "../../config.js";
import type { Database } from "../../db/client.js";
import { every, type Clock, type TimerHandle } from "../../clock/clock.js";
import { judgeAnswer } from "../../domain/delivery/answer.js";
import { errorField, isRecord } from "../../lib/narrow.js";
import type { Logger } from "../../lib/logger.js";
import { webhookListenersRepo, type AttachResult, type EndedBecause } from "../../repos/webhook-listeners.repo.js";
import type { QueueSignal } from "../queue-signal.js";
import { responsePreview, type SendRequest, type WebhookSendOutcome } from "../sender.js";

/** Cross-process answers: the process that got POST …/answers tells the one holding the stream. */
export const ANSWER_CHANNEL = "ars_listener_answers";
/** The scope a stream's token must keep. */
const STREAM_SCOPE = "webhooks:write";
/** NOTIFY payloads must stay under 8000 bytes. */
const MAX_NOTIFY_BYTES = 7_999;

/** One stream, as the HTTP layer writes it (http/event-stream.ts). */
export interface ListenerSink {
  /** false once the stream is over (ended, closed by its client, or dropped for not reading) */
  event(name: string, data: unknown): boolean;
  comment(text: string): boolean;
  /** Ends the stream from the server's side, with a last `closed` event saying why. */
  close(reason: string): void;
}

/** Who opened a stream. */
export interface StreamOwner {
  orgId: string;
  tokenId: string;
}

export type ConnectResult =
  | { kind: "connected"; disconnect(why: Extract<StreamEnd, "client" | "slow_client">): void }
  | { kind: Exclude<AttachResult, "connected" | "taken_over"> };

/** Why a stream ended, as the metrics count it (bounded). */
export type StreamEnd = "client" | "slow_client" | "revoked" | "listener_gone" | "replaced" | "shutdown";

export interface ListenerObserver {
  streamOpened(): void;
  streamClosed(why: StreamEnd): void;
}

const noListenerObserver: ListenerObserver = { streamOpened: () => undefined, streamClosed: () => undefined };

export interface ListenerTransport {
  /** One attempt down the listener's stream; resolves with the receiver's answer (or why none came). */
  send(listenerId: string, req: SendRequest): Promise<WebhookSendOutcome>;
  /** The listeners whose streams this process holds. */
  held(): string[];
  /** The ids of those streams: a listener's rows are claimed here only while one of them holds it. */
  heldStreams(): string[];
  /** Told when a stream this process held ends (its rows claimed and waiting go back unsent). */
  onDisconnect(fn: (listenerId: string) => void): void;
  /** Holds the listener's stream in this process, if it may be connected now. */
  connect(owner: StreamOwner, listenerId: string, sink: ListenerSink): Promise<ConnectResult>;
  /** Hands an answer to the attempt waiting for it, here or in the process holding the stream. */
  answer(listenerId: string, answer: WebhookListenerAnswer): Promise<void>;
  start(): Promise<void>;
  /** Ends every stream (the attempts waiting on them fail to connect) and stops its timers. */
  stop(): Promise<void>;
}

export interface ListenerTransportOptions {
  db: Database;
  logger: Logger;
  clock: Clock;
  signal: QueueSignal;
  config: Pick<DeliveryConfig, "totalTimeoutMs" | "userAgent">;
  /** a listener with no stream for this long is deleted */
  graceMs: number;
  /** a stream's hold on its listener; renewed every `checkMs` */
  leaseMs: number;
  /** how often streams are renewed and checked (revocation, deletion): at most 2 s, and a third of the lease */
  checkMs?: number;
  /** a comment on every stream this often, so proxies and the client see it alive */
  keepAliveMs: number;
  observe?: ListenerObserver;
}

interface Stream extends StreamOwner {
  listenerId: string;
  streamId: string;
  sink: ListenerSink;
  /** request id → the attempt waiting for its answer */
  waiting: Map<string, (outcome: WebhookSendOutcome) => void>;
}

function failure(code: "connection_error" | "timeout", message: string, durationMs = 0): WebhookSendOutcome {
  return { ok: false, status: null, headers: {}, durationMs, error: { code, message }, responseBody: null };
}

/** The outcome of an attempt for a listener no stream of this process holds: it cannot be reached. */
export const listenerNotConnected = (): WebhookSendOutcome => failure("connection_error", "the webhook listener is not connected");

function outcomeOf(a: WebhookListenerAnswer): WebhookSendOutcome {
  if (a.error || a.status === undefined) {
    const error = a.error ?? { code: "connection_error" as const, message: "no answer" };
    return failure(error.code, `local receiver: ${error.message}`, a.duration_ms);
  }
  const verdict = judgeAnswer(a.status);
  return { ...verdict, status: a.status, headers: {}, durationMs: a.duration_ms, responseBody: responsePreview(Buffer.from(a.body ?? "", "utf8")) };
}

const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const unb64 = (v: unknown) => (typeof v === "string" ? Buffer.from(v, "base64").toString("utf8") : undefined);

/**
 * An answer as it crosses NOTIFY: only what the attempt keeps (the body's 1 KiB preview), its
 * texts in base64 so no escaping can grow them. With the contract's bounds (ids, a 500-character
 * message) it stays under 4.5 KB, well within NOTIFY's 8000 bytes.
 */
export function encodeForwarded(listenerId: string, a: WebhookListenerAnswer): string {
  const payload = JSON.stringify({
    l: listenerId,
    r: a.request_id,
    d: a.duration_ms,
    ...(a.status !== undefined && { s: a.status }),
    ...(a.body !== undefined && { b: b64(responsePreview(Buffer.from(a.body, "utf8"))) }),
    ...(a.error && { e: a.error.code, m: b64(a.error.message) }),
  });
  if (Buffer.byteLength(payload) > MAX_NOTIFY_BYTES) throw new Error(`a forwarded listener answer of ${Buffer.byteLength(payload)} bytes does not fit NOTIFY`);
  return payload;
}

/** A NOTIFY payload back into an answer; anything else is ignored. */
export function decodeForwarded(payload: string): { listenerId: string; answer: WebhookListenerAnswer } | null {
  try {
    const v: unknown = JSON.parse(payload);
    if (!isRecord(v) || typeof v.l !== "string" || typeof v.r !== "string") return null;
    const message = unb64(v.m);
    const code = v.e === "connection_error" ? "connection_error" : v.e === "timeout" ? "timeout" : undefined;
    const error: WebhookListenerAnswer["error"] = code && message !== undefined ? { code, message } : undefined;
    const body = unb64(v.b);
    return {
      listenerId: v.l,
      answer: {
        request_id: v.r,
        duration_ms: typeof v.d === "number" ? v.d : 0,
        ...(typeof v.s === "number" && { status: v.s }),
        ...(body !== undefined && { body }),
        ...(error && { error }),
      },
    };
  } catch {
    return null;
  }
}

export function createListenerTransport({
  db, logger, clock, signal, config, graceMs, leaseMs, keepAliveMs, checkMs = Math.min(2_000, Math.floor(leaseMs / 3)), observe = noListenerObserver,
}: ListenerTransportOptions): ListenerTransport {
  const log = logger.child({ component: "listener-transport" });
  const repo = webhookListenersRepo(db);
  const streams = new Map<string, Stream>();
  const disconnectWatchers: ((listenerId: string) => void)[] = [];
  const timers: TimerHandle[] = [];
  let unlisten: (() => Promise<void>) | null = null;
  let running = false;
  let stopping: Promise<void> | null = null;
  let checking: Promise<void> | null = null;

  /** Ends a stream this process holds; `why` for the log and the metrics, `reason` for the client. */
  function drop(stream: Stream, why: StreamEnd, reason: string): Promise<void> {
    if (streams.get(stream.listenerId) !== stream) return Promise.resolve();
    streams.delete(stream.listenerId);
    for (const waiter of [...stream.waiting.values()]) waiter(failure("connection_error", `the webhook listener's stream ended before it answered: ${reason}`));
    if (why !== "client" && why !== "slow_client") stream.sink.close(reason);
    observe.streamClosed(why);
    const fields = { endpoint_id: stream.listenerId, org_id: stream.orgId, reason: why };
    if (why === "client" || why === "shutdown") log.info(fields, "webhook listener disconnected");
    else log.warn({ ...fields, detail: reason }, "webhook listener stream ended by the server");
    for (const watch of disconnectWatchers) watch(stream.listenerId);
    return repo.release(stream, clock.now()).catch((err: unknown) =>
      log.warn({ endpoint_id: stream.listenerId, err: errorField(err, "message") ?? String(err) }, "marking a webhook listener disconnected failed; its hold lapses by itself"),
    );
  }

  function send(listenerId: string, req: SendRequest): Promise<WebhookSendOutcome> {
    const stream = streams.get(listenerId);
    if (!stream) return Promise.resolve(listenerNotConnected());
    const requestId = randomUUID();
    const started = performance.now();
    return new Promise((resolve) => {
      const timer = clock.setTimeout(() => {
        stream.waiting.delete(requestId);
        resolve(failure("timeout", `the webhook listener did not answer within ${config.totalTimeoutMs} ms`, Math.round(performance.now() - started)));
      }, config.totalTimeoutMs);
      stream.waiting.set(requestId, (outcome) => {
        timer.cancel();
        stream.waiting.delete(requestId);
        resolve(outcome);
      });
      // the headers an HTTPS receiver gets, the transport's own included
      // a stream that is over (its client left or was dropped for not reading) ends at once
      const sent = stream.sink.event("delivery", { request_id: requestId, headers: { ...req.headers, "user-agent": config.userAgent }, body: req.body });
      if (!sent) void drop(stream, "client", "the client disconnected");
    });
  }

  function resolveAnswer(listenerId: string, answer: WebhookListenerAnswer): boolean {
    const waiter = streams.get(listenerId)?.waiting.get(answer.request_id);
    if (!waiter) return false;
    waiter(outcomeOf(answer));
    return true;
  }

  /** Renews the holds of this process's streams; ends those no longer entitled to run. */
  async function check(): Promise<void> {
    const held = [...streams.values()];
    if (!held.length) return;
    let kept: Set<string>;
    try {
      kept = await repo.renew(held, new Date(clock.now().getTime() + leaseMs), STREAM_SCOPE);
    } catch (err) {
      log.warn({ streams: held.length, err: errorField(err, "message") ?? String(err) }, "renewing webhook listener streams failed; tried again shortly");
      return;
    }
    for (const s of held) {
      if (kept.has(s.listenerId)) continue;
      const why = await repo.whyEnded(s, STREAM_SCOPE).catch(() => null);
      await drop(s, why === "revoked" || why === "scope" ? "revoked" : why === "replaced" ? "replaced" : "listener_gone", endedReason(why));
    }
  }

  async function sweep(): Promise<void> {
    const now = clock.now();
    try {
      const deleted = await repo.sweep(now, new Date(now.getTime() - graceMs));
      for (const endpointId of deleted) log.info({ endpoint_id: endpointId }, "webhook listener deleted: no stream for the grace period");
    } catch (err) {
      log.warn({ err: errorField(err, "message") ?? String(err) }, "sweeping disconnected webhook listeners failed; the next sweep tries again");
    }
  }

  async function stopNow(): Promise<void> {
    running = false;
    for (const t of timers.splice(0)) t.cancel();
    await checking;
    await Promise.all([...streams.values()].map((s) => drop(s, "shutdown", "the server is shutting down")));
    await unlisten?.();
  }

  return {
    send,
    held: () => [...streams.keys()],
    heldStreams: () => [...streams.values()].map((s) => s.streamId),
    onDisconnect: (fn) => void disconnectWatchers.push(fn),

    async connect(owner, listenerId, sink) {
      const now = clock.now();
      const streamId = randomUUID();
      const result = await repo.attach(owner.orgId, listenerId, now, new Date(now.getTime() + leaseMs), { streamId, tokenId: owner.tokenId });
      if (result !== "connected" && result !== "taken_over") return { kind: result };
      // taken over from a stream of this process: that one ends now (another process's, at its next renewal)
      const previous = streams.get(listenerId);
      if (previous) await drop(previous, "replaced", endedReason("replaced"));
      const stream: Stream = { ...owner, listenerId, streamId, sink, waiting: new Map() };
      streams.set(listenerId, stream);
      observe.streamOpened();
      log.info({ endpoint_id: listenerId, org_id: owner.orgId, taken_over: result === "taken_over" }, "webhook listener connected");
      sink.event("ready", { listener_id: listenerId });
      // its queued deliveries are this process's to claim now
      signal.notify();
      return { kind: "connected", disconnect: (why) => void drop(stream, why, why === "slow_client" ? SLOW_CLIENT : "the client disconnected") };
    },

    async answer(listenerId, answer) {
      if (resolveAnswer(listenerId, answer)) return;
      if (db.kind !== "postgres") return;
      await db.notify(ANSWER_CHANNEL, encodeForwarded(listenerId, answer));
    },

    async start() {
      if (running) return;
      running = true;
      if (db.kind === "postgres") {
        unlisten = await db.listen(ANSWER_CHANNEL, (payload) => {
          const forwarded = decodeForwarded(payload);
          if (forwarded) resolveAnswer(forwarded.listenerId, forwarded.answer);
        });
      }
      timers.push(
        every(clock, Math.max(1, checkMs), () => {
          checking ??= check().finally(() => (checking = null));
        }),
        every(clock, keepAliveMs, () => {
          for (const s of [...streams.values()]) if (!s.sink.comment("keep-alive")) void drop(s, "client", "the client disconnected");
        }),
        every(clock, Math.min(30_000, Math.max(1, Math.floor(graceMs / 2))), () => void sweep()),
      );
      void sweep();
    },

    stop() {
      stopping ??= stopNow();
      return stopping;
    },
  };
}

const SLOW_CLIENT = "the client stopped reading its stream";

function endedReason(why: EndedBecause | null): string {
  switch (why) {
    case "revoked":
      return "the token that opened this stream was revoked";
    case "scope":
      return "the token that opened this stream no longer holds webhooks:write";
    case "deleted":
      return "the listener was deleted";
    case "disabled":
      return "the listener was disabled";
    case "replaced":
      return "a newer stream of the same token took the listener over";
    case null:
      return "this process no longer holds the listener's stream";
  }
}
