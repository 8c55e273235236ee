// The delivery engine's loop: claim due rows → for each, prepare (payload, signature, receiver
// auth) → send → classify (outcome.ts) → record. Any number of dispatchers, in any number of
// processes, can share one database: rows are leased with FOR UPDATE SKIP LOCKED, outcomes
// are recorded only under the lease that claimed them, and a crashed dispatcher's rows come
// back when its leases run out (at-least-once; receivers dedupe on `webhook-id`).
//
// Work arrives by wake-up (the queue signal: in-process at once, LISTEN/NOTIFY from other
// processes), by a timer set for the earliest retry this dispatcher scheduled, and by a poll
// that catches whatever the other two miss (a notification lost during a reconnect, another
// process's retries, leases of a crashed process expiring).
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { AttemptTrigger } from "@audit-review/api-types/internal";
import type { DeliveryConfig } from "../config.js";
import type { Database } from "../db/client.js";
import { newId } from "../lib/ids.js";
import type { Logger } from "../lib/logger.js";
import type { SecretBox } from "../lib/secret-box.js";
import {
  deliveriesQueueRepo,
  type AttemptRecord,
  type ClaimedDelivery,
  type QueueEndpoint,
  type QueueEvent,
} from "../repos/deliveries-queue.repo.js";
import { decideOutcome, endpointUnavailable, type AttemptResult, type DeliveryUpdate, type EndpointEffect } from "./outcome.js";
import { serializePayload } from "./payload.js";
import type { QueueSignal } from "./queue-signal.js";
import { createReceiverAuth, type ReceiverAuth } from "./receiver-auth.js";
import { parseRetryAfter } from "./retry-schedule.js";
import type { Sender } from "./sender.js";
import { legacySignature, signatureHeader } from "./signing.js";

export interface DispatcherOptions {
  db: Database;
  logger: Logger;
  sender: Sender;
  secretBox: SecretBox;
  signal: QueueSignal;
  config: DeliveryConfig;
  now?: () => Date;
  random?: () => number;
  /** Prefix of this dispatcher's lease tokens (default: host, pid and a random suffix). */
  id?: string;
}

export interface DrainOptions {
  /** Also wait for retries scheduled in the future, until no row is pending or retrying. */
  untilSettled?: boolean;
  timeoutMs?: number;
}

export interface Dispatcher {
  readonly id: string;
  start(): void;
  /** Stops claiming, lets in-flight attempts finish and record, gives back claimed rows not yet started. */
  stop(): Promise<void>;
  /**
   * Test helper: resolves once nothing is due or in flight (with `untilSettled`, once nothing
   * is pending or retrying at all). Rejects after `timeoutMs`.
   */
  drain(opts?: DrainOptions): Promise<void>;
}

interface Job {
  delivery: ClaimedDelivery;
  leaseToken: string;
}

const DRAIN_RECHECK_MS = 10;
const DRAIN_SETTLE_RECHECK_MS = 25;

export function createDispatcher({
  db,
  logger,
  sender,
  secretBox,
  signal,
  config,
  now = () => new Date(),
  random = Math.random,
  id = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
}: DispatcherOptions): Dispatcher {
  const queue = deliveriesQueueRepo(db);
  const receiverAuth: ReceiverAuth = createReceiverAuth({
    sender,
    secretBox,
    now: () => now().getTime(),
    maxTokenResponseBytes: config.maxResponseBytes,
  });
  const log = logger.child({ component: "dispatcher", dispatcher: id });

  const inFlight = new Map<string, Promise<void>>();
  const busy = new Map<string, number>();
  let running = false;
  let claiming: Promise<void> | null = null;
  let claimAgain = false;
  let seq = 0;
  /** rows claimed so far, so drain() can tell whether a claim found anything */
  let claimed = 0;
  let pollTimer: NodeJS.Timeout | null = null;
  let wakeTimer: NodeJS.Timeout | null = null;
  let wakeAt = Infinity;
  const wakeTimes: number[] = [];
  let unsubscribe: (() => void) | null = null;
  let stopping: Promise<void> | null = null;
  const changeWaiters = new Set<() => void>();

  function changed(): void {
    for (const resolve of [...changeWaiters]) resolve();
    changeWaiters.clear();
  }
  const nextChange = () => new Promise<void>((resolve) => changeWaiters.add(resolve));

  function adjustBusy(endpointId: string, by: number): void {
    const n = (busy.get(endpointId) ?? 0) + by;
    if (n > 0) busy.set(endpointId, n);
    else busy.delete(endpointId);
  }

  /**
   * Timers for retries this dispatcher scheduled sooner than the next poll, so short delays are
   * kept to the millisecond; anything later is the poll's job. One timer, for the earliest.
   */
  function wakeUpAt(at: Date): void {
    const t = at.getTime();
    if (!running || t - Date.now() > config.pollIntervalMs) return;
    const i = wakeTimes.findIndex((w) => w > t);
    wakeTimes.splice(i === -1 ? wakeTimes.length : i, 0, t);
    armWakeTimer();
  }

  function armWakeTimer(): void {
    const next = wakeTimes[0];
    if (next === undefined || !running || (wakeTimer && wakeAt <= next)) return;
    if (wakeTimer) clearTimeout(wakeTimer);
    wakeAt = next;
    wakeTimer = setTimeout(() => {
      wakeTimer = null;
      wakeAt = Infinity;
      const passed = Date.now();
      while (wakeTimes.length && wakeTimes[0]! <= passed) wakeTimes.shift();
      tick();
      armWakeTimer();
    }, Math.max(0, next - Date.now()) + 1);
    wakeTimer.unref();
  }

  // ---- the steps of one delivery -------------------------------------------------------------

  function signingSecrets(ep: QueueEndpoint, at: Date): string[] {
    const secrets = [secretBox.open(ep.secret_enc)];
    // During a rotation's grace period receivers may still only know the previous secret.
    if (ep.previous_secret_enc && ep.previous_secret_expires_at && ep.previous_secret_expires_at > at) {
      secrets.push(secretBox.open(ep.previous_secret_enc));
    }
    return secrets;
  }

  /** Signs at send time: `webhook-timestamp` is this attempt's, so a retry is never "too old". */
  async function send(ep: QueueEndpoint, eventId: string, body: string, authHeaders: Record<string, string>) {
    const at = now();
    const secrets = signingSecrets(ep, at);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(authHeaders)) headers[name.toLowerCase()] = value;
    // Ours are set last: stored receiver headers can never replace the signature or the type.
    Object.assign(headers, {
      "content-type": "application/json",
      "webhook-id": eventId,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": signatureHeader({ id: eventId, timestamp: Math.floor(at.getTime() / 1000), body, secrets }),
      ...(ep.legacy_signature ? { "x-signature-256": legacySignature(secrets[0]!, body) } : {}),
    });
    return sender.send({ url: ep.url, headers, body });
  }

  /** One attempt, including receiver auth and the single token refetch after a 401. */
  async function attempt(ep: QueueEndpoint, eventId: string, body: string): Promise<AttemptResult & { responseBody: string | null }> {
    let auth = await receiverAuth.headersFor(ep);
    if (!auth.ok) return { ok: false, status: null, error: auth.error, retryAfterMs: null, responseBody: null };
    let res = await send(ep, eventId, body, auth.headers);
    if (res.status === 401 && auth.refreshable) {
      receiverAuth.invalidate(ep, auth.headers);
      auth = await receiverAuth.headersFor(ep);
      if (!auth.ok) return { ok: false, status: null, error: auth.error, retryAfterMs: null, responseBody: null };
      res = await send(ep, eventId, body, auth.headers);
    }
    return {
      ok: res.ok,
      status: res.status,
      error: res.error,
      retryAfterMs: parseRetryAfter(res.headers["retry-after"], now()),
      responseBody: res.responseBody,
    };
  }

  /** `at` is the moment the outcome was decided: `updated_at`, and the base of `next_attempt_at`. */
  async function record(job: Job, update: DeliveryUpdate, effect: EndpointEffect | null, at: Date, attemptRow: AttemptRecord | null = null): Promise<void> {
    const d = job.delivery;
    const result = await queue.record({
      deliveryId: d.id,
      endpointId: d.endpoint_id,
      leaseToken: job.leaseToken,
      update,
      endpoint: effect,
      attempt: attemptRow,
      now: at,
      failingDisableAfterMs: config.failingDisableAfterMs,
    });
    const fields = { delivery_id: d.id, endpoint_id: d.endpoint_id, event_id: d.event_id, attempt: update.attempt_count, status: update.status };
    if (!result.recorded) {
      // The lease ran out and another dispatcher took the row, or the endpoint was disabled or
      // deleted meanwhile (which fails its queued rows): either way the row is not ours to change.
      log.warn(fields, "delivery outcome not recorded: the row changed hands while the attempt ran");
      return;
    }
    if (result.disabled) log.warn({ endpoint_id: d.endpoint_id, reason: result.disabled }, "webhook endpoint disabled");
    if (update.status === "retrying" && update.next_attempt_at) wakeUpAt(update.next_attempt_at);
  }

  async function deliver(job: Job, ep: QueueEndpoint | undefined, ev: QueueEvent | undefined): Promise<void> {
    const d = job.delivery;
    // The endpoint is checked now, not at fan-out: it may have been disabled or deleted since.
    if (!ep || ep.deleted_at) return record(job, endpointUnavailable("endpoint_deleted", d.attempt_count, d.last_response_status), null, now());
    if (ep.status !== "enabled") return record(job, endpointUnavailable("endpoint_disabled", d.attempt_count, d.last_response_status), null, now());
    if (!ev) throw new Error(`event ${d.event_id} of delivery ${d.id} is missing`);

    const body = serializePayload(ev, {
      fields: ep.payload_fields,
      result_format: ep.payload_result_format,
      responses_filter: ep.payload_responses_filter,
      include_informational: ep.payload_include_informational,
    });
    const startedAt = now();
    const started = performance.now();
    const result = await attempt(ep, ev.id, body);
    const decidedAt = now();
    const outcome = decideOutcome({ attemptCount: d.attempt_count, result, failingSince: ep.failing_since, now: decidedAt, random, config });
    const trigger = d.next_trigger as AttemptTrigger;
    // A manual retry or recovery asks for one attempt, not a new schedule.
    if (trigger === "manual" && outcome.delivery.status === "retrying") {
      outcome.delivery = { ...outcome.delivery, status: "failed", next_attempt_at: null };
    }
    const attemptRow: AttemptRecord = {
      id: newId(),
      trigger,
      url: ep.url,
      started_at: startedAt,
      duration_ms: Math.round(performance.now() - started),
      response_body: result.responseBody,
    };
    log.info(
      {
        delivery_id: d.id,
        endpoint_id: d.endpoint_id,
        event_id: d.event_id,
        attempt: outcome.delivery.attempt_count,
        response_status: result.status,
        error_code: result.error?.code ?? null,
        outcome: outcome.delivery.status,
        duration_ms: Math.round(performance.now() - started),
      },
      "delivery attempt",
    );
    await record(job, outcome.delivery, outcome.endpoint, decidedAt, attemptRow);
  }

  // ---- claiming --------------------------------------------------------------------------------

  function track(job: Job, run: () => Promise<void>): void {
    const d = job.delivery;
    adjustBusy(d.endpoint_id, 1);
    const done = run()
      .catch((err: unknown) => {
        // The row keeps its lease and is tried again once the lease runs out.
        log.error({ delivery_id: d.id, endpoint_id: d.endpoint_id, err: err instanceof Error ? err.message : String(err) }, "delivery failed unexpectedly");
      })
      .finally(() => {
        inFlight.delete(d.id);
        adjustBusy(d.endpoint_id, -1);
        changed();
        tick(); // a slot is free
      });
    inFlight.set(d.id, done);
  }

  async function claimOnce(): Promise<boolean> {
    const free = Math.min(config.concurrency - inFlight.size, config.batchSize);
    if (free <= 0) return false;
    const leaseToken = `${id}:${++seq}`;
    const rows = await queue.claim({
      leaseToken,
      limit: free,
      leaseMs: config.leaseMs,
      perEndpoint: config.perEndpointConcurrency,
      busyEndpoints: busy,
      inFlight: [...inFlight.keys()],
    });
    if (!rows.length) return false;
    claimed += rows.length;

    // Counted as in flight at once, so the next claim sees the slots as taken.
    let release!: () => void;
    const loaded = new Promise<void>((resolve) => (release = resolve));
    let endpoints = new Map<string, QueueEndpoint>();
    let events = new Map<string, QueueEvent>();
    let usable = false;
    for (const delivery of rows) {
      const job = { delivery, leaseToken };
      track(job, async () => {
        await loaded;
        if (usable) await deliver(job, endpoints.get(delivery.endpoint_id), events.get(delivery.event_id));
      });
    }
    try {
      if (running) {
        endpoints = await queue.endpoints(rows.map((r) => r.endpoint_id));
        events = await queue.events(rows.map((r) => r.event_id));
        usable = running;
      }
    } finally {
      // Not started (stopping, or the batch could not be loaded): give the rows back now
      // instead of letting them wait out the lease.
      if (!usable) await queue.release(rows.map((r) => r.id), leaseToken).catch(() => undefined);
      release();
    }
    return rows.length === free;
  }

  function tick(): void {
    if (!running) return;
    if (claiming) {
      claimAgain = true;
      return;
    }
    claiming = (async () => {
      try {
        do {
          claimAgain = false;
          // A full batch means more may be due right now.
          if (await claimOnce()) claimAgain = true;
        } while (claimAgain && running);
      } catch (err) {
        log.error({ err: err instanceof Error ? err.message : String(err) }, "claiming deliveries failed; the poll will try again");
      } finally {
        claiming = null;
        changed();
      }
    })();
  }

  async function idle(deadline: number): Promise<void> {
    while (claiming || inFlight.size > 0) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error("dispatcher drain timed out with deliveries in flight");
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([nextChange(), new Promise<void>((resolve) => (timer = setTimeout(resolve, left)))]);
      clearTimeout(timer);
    }
  }

  return {
    id,

    start() {
      if (running || stopping) return;
      running = true;
      // Every leased attempt must be able to finish (token fetch, send, refetch, resend) in time.
      if (config.leaseMs < 4 * config.totalTimeoutMs) {
        log.warn({ lease_ms: config.leaseMs, total_timeout_ms: config.totalTimeoutMs }, "delivery lease is shorter than a worst-case attempt");
      }
      unsubscribe = signal.onWake(tick);
      pollTimer = setInterval(tick, config.pollIntervalMs);
      tick();
    },

    stop() {
      stopping ??= (async () => {
        running = false;
        if (pollTimer) clearInterval(pollTimer);
        if (wakeTimer) clearTimeout(wakeTimer);
        unsubscribe?.();
        await claiming;
        await Promise.allSettled([...inFlight.values()]);
      })();
      return stopping;
    },

    async drain({ untilSettled = false, timeoutMs = 30_000 } = {}) {
      const deadline = Date.now() + timeoutMs;
      const pause = async (ms: number) => {
        if (Date.now() + ms > deadline) throw new Error("dispatcher drain timed out waiting for due deliveries");
        await new Promise((resolve) => setTimeout(resolve, ms));
      };
      for (;;) {
        if (!running) throw new Error("dispatcher is not running");
        await idle(deadline);
        const { nextAt, dbNow } = await queue.state();
        if (!nextAt) return;
        const wait = nextAt.getTime() - dbNow.getTime();
        if (wait > 0) {
          if (!untilSettled) return;
          // Not longer than a short recheck: the row may be leased by another live dispatcher
          // that records it long before its lease would run out.
          await pause(Math.min(wait + 1, DRAIN_SETTLE_RECHECK_MS));
          continue;
        }
        const before = claimed;
        tick();
        await claiming;
        // Due, yet nothing claimable by us (per-endpoint cap, or a row another dispatcher just
        // took): look again shortly rather than spin.
        if (claimed === before) await pause(DRAIN_RECHECK_MS);
      }
    },
  };
}
