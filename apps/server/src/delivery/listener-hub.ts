// The webhook listeners whose streams this process holds (GET /v2/webhook_listeners/{id}/stream).
//
// Many processes may run against one PostgreSQL, and a stream is held by one of them. So a
// connected listener's deliveries are claimed only here: the general claims skip listeners whose
// `listener_connected_until` is in the future (repos/deliveries-queue.repo.ts), and this hub,
// which keeps that moment ahead while its streams live, claims their rows itself
// (repos/webhook-listeners.repo.ts) and runs each through the engine's own steps (deliver.ts:
// prepare → sign → attempt → decide → record), with the transport of transport.ts sending the
// prepared request down the stream instead of over the network. The answer comes back through
// POST …/answers, possibly to another process: there it is forwarded with NOTIFY.
//
// When a stream closes, its listener is marked disconnected at once: the general dispatchers
// then attempt its due rows, which fail with `connection_error` and retry on the schedule. After
// the grace period without a stream, the sweep deletes it.
import { randomUUID } from "node:crypto";
import type { WebhookListenerAnswer } from "@audit-review/api-types/internal";
import { hostname } from "node:os";
import { errorField, isRecord } from "../lib/narrow.js";
import { deliveriesQueueRepo, type OutcomeRecord, type RecordResult } from "../repos/deliveries-queue.repo.js";
import { webhookListenersRepo, type AttachResult } from "../repos/webhook-listeners.repo.js";
import { createAttempt } from "./attempt.js";
import { every, systemClock, type TimerHandle } from "./clock.js";
import { createDeliverer } from "./deliver.js";
import { createKeyring } from "./keyring.js";
import type { EngineOptions } from "./engine-options.js";
import { noObserver } from "./observer.js";
import { createReceiverAuth } from "./receiver-auth.js";
import { createRecorder } from "./recorder.js";
import { responsePreview, type SendRequest, type WebhookSendOutcome } from "./sender.js";
import { listenerNotConnected, routedSender, type ListenerTransport } from "./transport.js";

/** Cross-process answers: the process that got POST …/answers tells the one holding the stream. */
export const ANSWER_CHANNEL = "ars_listener_answers";
/** A comment on every stream this often, so proxies and the client see it alive. */
const KEEP_ALIVE_MS = 15_000;

/** One stream, as the HTTP layer writes it. */
export interface ListenerSink {
  event(name: string, data: unknown): void;
  comment(text: string): void;
  /** Ends the stream from the server's side (shutdown). */
  end(): void;
}

/** What the local receiver answered (the body of POST …/answers). */
export type ListenerAnswer = WebhookListenerAnswer;

export type ConnectResult = { kind: "connected"; disconnect(): void } | { kind: Exclude<AttachResult, "connected"> };

export interface ListenerHub extends ListenerTransport {
  /** Holds the listener's stream in this process, if it may be connected now. */
  connect(orgId: string, listenerId: string, sink: ListenerSink): Promise<ConnectResult>;
  /** Hands an answer to the attempt waiting for it, here or in the process holding the stream. */
  answer(listenerId: string, answer: ListenerAnswer): Promise<void>;
  start(): Promise<void>;
  /** Ends every stream (their listeners become disconnected) and lets the attempts record. */
  stop(): Promise<void>;
}

export interface ListenerHubOptions extends EngineOptions {
  graceMs: number;
  leaseMs: number;
  /** the org's endpoint limit, which a connected listener counts toward */
  limit: number;
}

interface Stream {
  orgId: string;
  sink: ListenerSink;
  /** request id → the attempt waiting for its answer */
  waiting: Map<string, (outcome: WebhookSendOutcome) => void>;
  /** delivery ids claimed and not yet recorded */
  inFlight: Set<string>;
  claiming: boolean;
  again: boolean;
}

function outcomeOf(a: ListenerAnswer): WebhookSendOutcome {
  if (a.error || a.status === undefined) {
    const error = a.error ?? { code: "connection_error" as const, message: "no answer" };
    return { ok: false, status: null, headers: {}, durationMs: a.duration_ms, error: { code: error.code, message: `local receiver: ${error.message}` }, responseBody: null };
  }
  const ok = a.status >= 200 && a.status < 300;
  return {
    ok,
    status: a.status,
    headers: {},
    durationMs: a.duration_ms,
    error: ok ? null : { code: "unexpected_status", message: `receiver answered ${a.status}` },
    responseBody: responsePreview(Buffer.from(a.body ?? "", "utf8")),
  };
}

/** A NOTIFY payload back into an answer; anything else is ignored. */
function parseForwarded(payload: string): { listenerId: string; answer: ListenerAnswer } | null {
  try {
    const v: unknown = JSON.parse(payload);
    if (!isRecord(v) || typeof v.listener_id !== "string" || !isRecord(v.answer) || typeof v.answer.request_id !== "string") return null;
    const a = v.answer;
    const code = isRecord(a.error) ? a.error.code : undefined;
    const message = isRecord(a.error) ? a.error.message : undefined;
    const error: ListenerAnswer["error"] = (code === "connection_error" || code === "timeout") && typeof message === "string" ? { code, message } : undefined;
    return {
      listenerId: v.listener_id,
      answer: {
        request_id: String(a.request_id),
        ...(typeof a.status === "number" && { status: a.status }),
        ...(typeof a.body === "string" && { body: a.body }),
        duration_ms: typeof a.duration_ms === "number" ? a.duration_ms : 0,
        ...(error && { error }),
      },
    };
  } catch {
    return null;
  }
}

export function createListenerHub({
  db, logger, sender, secretBox, signal, config, graceMs, leaseMs, limit, clock = systemClock, random = Math.random, observe = noObserver,
}: ListenerHubOptions): ListenerHub {
  const id = `${hostname()}:${process.pid}:listeners:${randomUUID().slice(0, 8)}`;
  const log = logger.child({ component: "listener-hub" });
  const repo = webhookListenersRepo(db);
  const queue = deliveriesQueueRepo(db);
  const streams = new Map<string, Stream>();
  const timers: TimerHandle[] = [];
  const attempts = new Set<Promise<void>>();
  let unsubscribe: (() => void) | null = null;
  let unlisten: (() => Promise<void>) | null = null;
  let running = false;
  let stopping: Promise<void> | null = null;
  let seq = 0;

  const recorder = createRecorder<OutcomeRecord, RecordResult>({
    write: (batch) => (observe.recordBatch(batch.length), queue.recordBatch(batch, config.failingDisableAfterMs)),
    keyOf: (o) => o.deliveryId, log: logger.child({ component: "recorder" }),
    clock, maxBatch: config.recordBatchSize, maxDelayMs: config.recordDelayMs,
  });

  /** Down the stream, then wait for the answer (at most the HTTPS total timeout). */
  function sendDown(listenerId: string, req: SendRequest): Promise<WebhookSendOutcome> {
    const stream = streams.get(listenerId);
    if (!stream) return Promise.resolve(listenerNotConnected());
    const requestId = randomUUID();
    const started = performance.now();
    return new Promise((resolve) => {
      const timer = clock.setTimeout(() => {
        stream.waiting.delete(requestId);
        resolve({ ...listenerNotConnected(), durationMs: Math.round(performance.now() - started), error: { code: "timeout", message: `the webhook listener did not answer within ${config.totalTimeoutMs} ms` } });
      }, config.totalTimeoutMs);
      stream.waiting.set(requestId, (outcome) => {
        timer.cancel();
        stream.waiting.delete(requestId);
        resolve(outcome);
      });
      // the headers an HTTPS receiver gets, the transport's own included
      stream.sink.event("delivery", { request_id: requestId, headers: { ...req.headers, "user-agent": config.userAgent }, body: req.body });
    });
  }

  const transport: ListenerTransport = { send: sendDown };
  const engineSender = routedSender(sender, transport);
  const receiverAuth = createReceiverAuth({ sender: engineSender, secretBox, now: () => clock.now().getTime(), maxTokenResponseBytes: config.maxResponseBytes });
  const deliverer = createDeliverer({
    queue, attempt: createAttempt({ sender: engineSender, receiverAuth, clock }), keyring: createKeyring(secretBox), recorder, clock, random, config, log, observe,
    hooks: {
      attemptOver: () => undefined,
      unreachable: () => undefined,
      retryAt(at) {
        const wait = at.getTime() - clock.now().getTime();
        if (running && wait <= config.pollIntervalMs) clock.setTimeout(pumpAll, wait + 1);
      },
    },
  });

  /** Claims the listener's due rows while it has room (`perEndpointConcurrency` in flight) and starts them. */
  async function pump(listenerId: string): Promise<void> {
    const stream = streams.get(listenerId);
    if (!stream || !running) return;
    if (stream.claiming) {
      stream.again = true;
      return;
    }
    stream.claiming = true;
    try {
      for (;;) {
        stream.again = false;
        const room = config.perEndpointConcurrency - stream.inFlight.size;
        const leaseToken = `${id}:${++seq}`;
        const rows = await repo.claim({ listenerId, leaseToken, leaseMs: config.leaseMs, now: clock.now(), limit: room, inFlight: [...stream.inFlight] });
        if (rows.length) {
          const [endpoints, events] = await Promise.all([queue.endpoints([listenerId]), queue.events(rows.map((r) => r.event_id))]);
          const mark = deliverer.startRead();
          deliverer.claimed(endpoints, rows.map((r) => r.endpoint_id), mark);
          for (const d of rows) {
            stream.inFlight.add(d.id);
            const run = deliverer.deliver({ d, leaseToken, ev: events.get(d.event_id), since: mark })
              .catch((err: unknown) => log.error({ delivery_id: d.id, endpoint_id: listenerId, err: err instanceof Error ? err.message : String(err) }, "listener delivery failed unexpectedly"))
              .finally(() => {
                stream.inFlight.delete(d.id);
                attempts.delete(run);
                void pump(listenerId);
              });
            attempts.add(run);
          }
        }
        if (!stream.again && rows.length < room) return;
        if (!streams.has(listenerId) || !running) return;
      }
    } catch (err) {
      log.error({ endpoint_id: listenerId, err: err instanceof Error ? err.message : String(err) }, "claiming listener deliveries failed; the poll will try again");
    } finally {
      stream.claiming = false;
    }
  }

  function pumpAll(): void {
    for (const listenerId of streams.keys()) void pump(listenerId);
  }

  function resolveAnswer(listenerId: string, answer: ListenerAnswer): boolean {
    const waiter = streams.get(listenerId)?.waiting.get(answer.request_id);
    if (!waiter) return false;
    waiter(outcomeOf(answer));
    return true;
  }

  function dropStream(listenerId: string, stream: Stream, reason: string): Promise<void> {
    if (streams.get(listenerId) !== stream) return Promise.resolve();
    streams.delete(listenerId);
    for (const waiter of [...stream.waiting.values()]) waiter({ ...listenerNotConnected(), error: { code: "connection_error", message: `the webhook listener ${reason} before answering` } });
    log.info({ endpoint_id: listenerId, org_id: stream.orgId, reason }, "webhook listener disconnected");
    return repo.release(listenerId, clock.now()).then(
      // its due rows are the general dispatchers' now (they fail to connect and retry)
      () => signal.notify(),
      (err: unknown) => log.warn({ endpoint_id: listenerId, err: String(err) }, "marking a webhook listener disconnected failed; its hold lapses by itself"),
    );
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

  const hub: ListenerHub = {
    send: sendDown,

    async connect(orgId, listenerId, sink) {
      const now = clock.now();
      const result = await repo.attach(orgId, listenerId, now, new Date(now.getTime() + leaseMs), limit);
      if (result !== "connected") return { kind: result };
      const stream: Stream = { orgId, sink, waiting: new Map(), inFlight: new Set(), claiming: false, again: false };
      streams.set(listenerId, stream);
      log.info({ endpoint_id: listenerId, org_id: orgId }, "webhook listener connected");
      sink.event("ready", { listener_id: listenerId });
      void pump(listenerId);
      return { kind: "connected", disconnect: () => void dropStream(listenerId, stream, "disconnected") };
    },

    async answer(listenerId, answer) {
      if (resolveAnswer(listenerId, answer)) return;
      if (db.kind !== "postgres") return;
      // NOTIFY payloads stay under 8000 bytes: only what the attempt keeps of the body travels
      const body = answer.body === undefined ? undefined : responsePreview(Buffer.from(answer.body, "utf8"));
      await db.notify(ANSWER_CHANNEL, JSON.stringify({ listener_id: listenerId, answer: { ...answer, ...(body !== undefined && { body }) } }));
    },

    async start() {
      if (running) return;
      running = true;
      if (db.kind === "postgres") {
        unlisten = await db.listen(ANSWER_CHANNEL, (payload) => {
          const forwarded = parseForwarded(payload);
          if (forwarded) resolveAnswer(forwarded.listenerId, forwarded.answer);
        });
      }
      unsubscribe = signal.onWake(pumpAll);
      timers.push(
        every(clock, config.pollIntervalMs, pumpAll),
        every(clock, Math.max(1, Math.floor(leaseMs / 3)), () => {
          const ids = [...streams.keys()];
          repo.renew(ids, new Date(clock.now().getTime() + leaseMs)).catch((err: unknown) => log.warn({ err: String(err) }, "renewing webhook listener streams failed"));
        }),
        every(clock, KEEP_ALIVE_MS, () => {
          for (const s of streams.values()) s.sink.comment("keep-alive");
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
  return hub;

  async function stopNow(): Promise<void> {
    running = false;
    for (const t of timers.splice(0)) t.cancel();
    unsubscribe?.();
    const released = [...streams].map(([listenerId, stream]) => {
      stream.sink.end();
      return dropStream(listenerId, stream, "was closed by the server");
    });
    await Promise.all(released);
    await Promise.allSettled([...attempts]);
    await recorder.flush();
    await unlisten?.();
  }
}
