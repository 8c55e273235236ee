// The delivery engine's scheduler. It only decides when each step runs and how many at once:
// claim (repos/deliveries-queue.repo.ts) → prepare (prepare.ts) → attempt (attempt.ts) →
// decide (outcome.ts) → record (recorder.ts). Any number of dispatchers, in any number of
// processes, can share one database: rows are leased with FOR UPDATE SKIP LOCKED, outcomes are
// recorded only under the lease that claimed them, and a crashed dispatcher's rows come back
// when its leases run out (at-least-once; receivers dedupe on `webhook-id`).
//
// Work arrives by wake-up (the queue signal: in-process at once, LISTEN/NOTIFY from other
// processes), by a timer set for the earliest retry this dispatcher scheduled, and by a poll
// that catches whatever the other two miss.
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { DeliveryConfig } from "../config.js";
import type { Database } from "../db/client.js";
import type { Logger } from "../lib/logger.js";
import type { SecretBox } from "../lib/secret-box.js";
import { deliveriesQueueRepo, type OutcomeRecord, type RecordResult } from "../repos/deliveries-queue.repo.js";
import { createAttempt } from "./attempt.js";
import { every, systemClock, type Clock, type TimerHandle } from "./clock.js";
import { createDeliverer, type Job } from "./deliver.js";
import { drainQueue, type DrainOptions } from "./drain.js";
import { createKeyring } from "./keyring.js";
import type { QueueSignal } from "./queue-signal.js";
import { createReceiverAuth } from "./receiver-auth.js";
import { createRecorder } from "./recorder.js";
import type { Sender } from "./sender.js";

export type { DrainOptions } from "./drain.js";

export interface DispatcherOptions {
  db: Database;
  logger: Logger;
  sender: Sender;
  secretBox: SecretBox;
  signal: QueueSignal;
  config: DeliveryConfig;
  clock?: Clock;
  random?: () => number;
  /** Prefix of this dispatcher's lease tokens (default: host, pid and a random suffix). */
  id?: string;
}

export interface Dispatcher {
  readonly id: string;
  start(): void;
  /** Stops claiming, lets in-flight attempts finish and record, gives back claimed rows not yet started. */
  stop(): Promise<void>;
  /** Claims what is due now; resolves with the number of rows claimed. */
  claimNow(): Promise<number>;
  /** Resolves once no claim, attempt or record of this dispatcher is under way. */
  idle(): Promise<void>;
  /** Resolves once nothing is due or in flight (`untilSettled`: nothing pending or retrying at all). */
  drain(opts?: DrainOptions): Promise<void>;
}

export function createDispatcher({
  db, logger, sender, secretBox, signal, config, clock = systemClock, random = Math.random,
  id = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
}: DispatcherOptions): Dispatcher {
  const queue = deliveriesQueueRepo(db);
  const receiverAuth = createReceiverAuth({ sender, secretBox, now: () => clock.now().getTime(), maxTokenResponseBytes: config.maxResponseBytes });
  const attempt = createAttempt({ sender, receiverAuth, clock });
  const keyring = createKeyring(secretBox);
  const recorder = createRecorder<OutcomeRecord, RecordResult>({
    write: (batch) => queue.recordBatch(batch, config.failingDisableAfterMs),
    clock, maxBatch: config.recordBatchSize, maxDelayMs: config.recordDelayMs,
  });
  const log = logger.child({ component: "dispatcher", dispatcher: id });

  // A claimed row is held from its claim until its outcome is recorded. Rows are claimed ahead
  // (up to `perEndpoint` more per endpoint than may be sent at once, and a batch more in all), so
  // a freed slot starts the next attempt at once instead of waiting for a claim's round trips.
  const held = new Map<string, Promise<void> | null>(); // delivery id → its run once started
  const ready = new Map<string, Job[]>(); // endpoint → claimed rows waiting for a slot
  const claimedPer = new Map<string, number>(); // endpoint → rows claimed and not yet sent
  const busy = new Map<string, number>(); // endpoint → attempts on the wire
  const resting = new Map<string, number>(); // endpoint → until when it is not claimed (unreachable)
  let sending = 0;
  let waiting = 0;
  let running = false;
  let claiming: Promise<number> | null = null;
  let claimAgain = false;
  let seq = 0;
  let poll: TimerHandle | null = null;
  let unsubscribe: (() => void) | null = null;
  let stopping: Promise<void> | null = null;
  const wakeTimers = new Set<TimerHandle>();
  const idleWaiters: (() => void)[] = [];

  const settled = () => {
    if (claiming || held.size) return;
    for (const resolve of idleWaiters.splice(0)) resolve();
  };
  const bump = (map: Map<string, number>, key: string, by: number) => {
    const n = (map.get(key) ?? 0) + by;
    if (n > 0) map.set(key, n);
    else map.delete(key);
  };

  /** A retry due before the next poll gets its own timer, so short delays are kept to the millisecond. */
  function wakeUpAt(at: Date): void {
    const wait = at.getTime() - clock.now().getTime();
    if (!running || wait > config.pollIntervalMs) return;
    const t = clock.setTimeout(() => (wakeTimers.delete(t), tick()), wait + 1);
    wakeTimers.add(t);
  }

  function rest(endpointId: string, at: Date): void {
    resting.set(endpointId, at.getTime() + config.unreachableRestMs);
    wakeUpAt(new Date(at.getTime() + config.unreachableRestMs));
  }

  /** Endpoints not to claim now: resting, or with all they may hold already claimed. */
  function skipNow(): string[] {
    const now = clock.now().getTime();
    for (const [ep, until] of resting) if (until <= now) resting.delete(ep);
    const full = [...claimedPer].filter(([, n]) => n >= 2 * config.perEndpointConcurrency).map(([ep]) => ep);
    return [...resting.keys(), ...full];
  }

  const deliverer = createDeliverer({
    queue, attempt, keyring, recorder, clock, random, config, log,
    hooks: {
      attemptOver(endpointId) {
        bump(busy, endpointId, -1);
        sending--;
        pump();
        void tick();
      },
      unreachable: (endpointId, at) => config.unreachableRestMs > 0 && rest(endpointId, at),
      retryAt: wakeUpAt,
    },
  });

  /**
   * Starts waiting rows while there are slots: `concurrency` in all, `perEndpoint` per endpoint.
   * Rows of the claim under `claimMark` start on that claim's endpoint read; a row that waited
   * for its slot reads its endpoint again now, so a disable, delete or rotation committed while
   * it waited is seen at send time (rows of one endpoint starting together share that read).
   */
  function pump(claimMark?: number): void {
    if (!running) return;
    const floor = deliverer.nextRead();
    for (const [endpointId, jobs] of ready) {
      while (jobs.length && sending < config.concurrency && (busy.get(endpointId) ?? 0) < config.perEndpointConcurrency) {
        const job = jobs.shift()!;
        waiting--;
        sending++;
        bump(busy, endpointId, 1);
        bump(claimedPer, endpointId, -1);
        const done = deliverer.deliver(job.since === claimMark ? job : { ...job, since: floor })
          // The row keeps its lease and is tried again once the lease runs out.
          .catch((err: unknown) => log.error({ delivery_id: job.d.id, endpoint_id: endpointId, err: err instanceof Error ? err.message : String(err) }, "delivery failed unexpectedly"))
          .finally(() => (held.delete(job.d.id), settled()));
        held.set(job.d.id, done);
      }
      if (!jobs.length) ready.delete(endpointId);
      if (sending >= config.concurrency) return;
    }
  }

  async function claimOnce(): Promise<number> {
    const free = Math.min(config.concurrency + config.batchSize - sending - waiting, config.batchSize);
    if (free <= 0) return 0;
    const leaseToken = `${id}:${++seq}`;
    const mark = deliverer.startRead(); // the claim reads the endpoints too
    const claim = await queue.claim({
      leaseToken, limit: free, leaseMs: config.leaseMs, now: clock.now(), perEndpoint: 2 * config.perEndpointConcurrency,
      busyEndpoints: new Map([...claimedPer].map(([ep, n]) => [ep, n + (busy.get(ep) ?? 0)])), skipEndpoints: skipNow(), inFlight: [...held.keys()],
    });
    const { rows, endpoints, events } = claim;
    if (!rows.length) return 0;
    if (!running) {
      // Stopping meanwhile: give the rows back now rather than when their lease runs out.
      await queue.release(rows.map((r) => r.id), leaseToken).catch(() => undefined);
      return 0;
    }
    for (const r of rows) held.set(r.id, null);
    deliverer.claimed(endpoints, rows.map((r) => r.endpoint_id), mark);
    for (const d of rows) {
      const jobs = ready.get(d.endpoint_id) ?? [];
      jobs.push({ d, leaseToken, ev: events.get(d.event_id), since: mark });
      ready.set(d.endpoint_id, jobs);
      bump(claimedPer, d.endpoint_id, 1);
      waiting++;
    }
    pump(mark);
    if (rows.length === free) claimAgain = true; // a full batch: more may be due right now
    return rows.length;
  }

  /** Stopping: rows claimed but not started go back to the queue now rather than when their lease ends. */
  async function releaseWaiting(): Promise<void> {
    const byLease = new Map<string, string[]>();
    for (const jobs of ready.values()) for (const j of jobs) byLease.set(j.leaseToken, [...(byLease.get(j.leaseToken) ?? []), j.d.id]);
    ready.clear();
    claimedPer.clear();
    waiting = 0;
    for (const [leaseToken, ids] of byLease) {
      await queue.release(ids, leaseToken).catch(() => undefined);
      for (const id of ids) held.delete(id);
    }
    settled();
  }

  function tick(): Promise<number> {
    if (!running) return Promise.resolve(0);
    if (claiming) {
      claimAgain = true;
      return claiming;
    }
    const run = async () => {
      let total = 0;
      try {
        do {
          claimAgain = false;
          total += await claimOnce();
        } while (claimAgain && running);
      } catch (err) {
        log.error({ err: err instanceof Error ? err.message : String(err) }, "claiming deliveries failed; the poll will try again");
      } finally {
        claiming = null;
        settled();
      }
      return total;
    };
    return (claiming = run());
  }

  const dispatcher: Dispatcher = {
    id,
    start() {
      if (running || stopping) return;
      running = true;
      // Every leased attempt must be able to finish (token fetch, send, refetch, resend) in time.
      if (config.leaseMs < 4 * config.totalTimeoutMs) log.warn({ lease_ms: config.leaseMs, total_timeout_ms: config.totalTimeoutMs }, "delivery lease is shorter than a worst-case attempt");
      unsubscribe = signal.onWake(() => void tick());
      poll = every(clock, config.pollIntervalMs, () => void tick());
      void tick();
    },
    stop() {
      stopping ??= (async () => {
        running = false;
        poll?.cancel();
        for (const t of wakeTimers) t.cancel();
        unsubscribe?.();
        await claiming;
        await releaseWaiting();
        await Promise.allSettled([...held.values()]);
        await recorder.flush();
      })();
      return stopping;
    },
    claimNow: () => tick(),
    idle() {
      if (!claiming && !held.size) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
    drain(opts) {
      if (!running) return Promise.reject(new Error("dispatcher is not running"));
      return drainQueue({ dispatcher, queue, clock }, opts);
    },
  };
  return dispatcher;
}
