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
import { noObserver, type DeliveryObserver } from "./observer.js";
import type { QueueSignal } from "./queue-signal.js";
import { createReceiverAuth } from "./receiver-auth.js";
import { createRecorder } from "./recorder.js";
import type { Sender } from "./sender.js";

export type { DrainOptions } from "./drain.js";

/** Rows an endpoint may have claimed, in multiples of its concurrency (sending and waiting together). */
const AHEAD = 3;
/** Claims on the wire at once. With AHEAD, claims of `perEndpoint` rows each stay within the cap. */
const MAX_CLAIMS = 2;

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
  /** Told what the engine does (the metrics); nobody by default. */
  observe?: DeliveryObserver;
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
  id = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`, observe = noObserver,
}: DispatcherOptions): Dispatcher {
  const queue = deliveriesQueueRepo(db);
  const receiverAuth = createReceiverAuth({ sender, secretBox, now: () => clock.now().getTime(), maxTokenResponseBytes: config.maxResponseBytes });
  const attempt = createAttempt({ sender, receiverAuth, clock });
  const keyring = createKeyring(secretBox);
  const recorder = createRecorder<OutcomeRecord, RecordResult>({
    write: (batch) => (observe.recordBatch(batch.length), queue.recordBatch(batch, config.failingDisableAfterMs)),
    keyOf: (o) => o.deliveryId, log: logger.child({ component: "recorder" }),
    clock, maxBatch: config.recordBatchSize, maxDelayMs: config.recordDelayMs,
  });
  const log = logger.child({ component: "dispatcher", dispatcher: id });

  // A claimed row is held from its claim until its outcome is recorded. Rows are claimed ahead
  // (up to `AHEAD` times `perEndpoint` per endpoint, and a batch more than `concurrency` in all),
  // so a freed slot starts the next attempt at once instead of waiting for a claim's round trip.
  // Up to `MAX_CLAIMS` claims are in flight at once: the next starts while the last is still on
  // the wire once a low-water mark of free rows is reached, so sending never waits on one claim.
  // They share the per-endpoint accounting: each takes at most `perEndpoint` rows of an endpoint,
  // and reserves that room of every endpoint already known until it returns.
  const perClaim = config.perEndpointConcurrency;
  const perEndpointCap = AHEAD * config.perEndpointConcurrency;
  const held = new Map<string, Promise<void> | null>(); // delivery id → its run once started
  const ready = new Map<string, Job[]>(); // endpoint → claimed rows waiting for a slot
  const claimedPer = new Map<string, number>(); // endpoint → rows claimed and not yet sent
  const busy = new Map<string, number>(); // endpoint → attempts on the wire
  const resting = new Map<string, number>(); // endpoint → until when it is not claimed (unreachable)
  let sending = 0;
  let waiting = 0;
  let running = false;
  const claims = new Set<Promise<number>>(); // claims on the wire
  const reserved = new Map<string, number>(); // endpoint → rows the claims on the wire may still add
  let reservedRows = 0; // their limits, together
  let wokenMeanwhile = false; // a wake-up came while claims were on the wire and started none
  let seq = 0;
  let poll: TimerHandle | null = null;
  let unsubscribe: (() => void) | null = null;
  let stopping: Promise<void> | null = null;
  const wakeTimers = new Set<TimerHandle>();
  const idleWaiters: (() => void)[] = [];

  const settled = () => {
    if (claims.size || held.size) return;
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

  /**
   * An unreachable endpoint is not claimed until its rest is over, and the rows claimed ahead for
   * it go back to the queue untried: sent now they would only fail the same way, and held they
   * would take room from the other endpoints' claims.
   */
  function rest(endpointId: string, at: Date): void {
    resting.set(endpointId, at.getTime() + config.unreachableRestMs);
    wakeUpAt(new Date(at.getTime() + config.unreachableRestMs));
    const jobs = ready.get(endpointId);
    if (!jobs?.length) return;
    ready.delete(endpointId);
    waiting -= jobs.length;
    bump(claimedPer, endpointId, -jobs.length);
    void giveBack(jobs);
  }

  /** Releases claimed rows that will not be started, and forgets them once released. */
  async function giveBack(jobs: readonly Job[]): Promise<void> {
    const byLease = new Map<string, string[]>();
    for (const j of jobs) byLease.set(j.leaseToken, [...(byLease.get(j.leaseToken) ?? []), j.d.id]);
    for (const [leaseToken, ids] of byLease) {
      await queue.release(ids, leaseToken).catch(() => undefined);
      for (const id of ids) held.delete(id);
    }
    settled();
  }

  /** Endpoints not to claim now: resting after they could not be reached. */
  function restingNow(): string[] {
    const now = clock.now().getTime();
    for (const [ep, until] of resting) if (until <= now) resting.delete(ep);
    return [...resting.keys()];
  }

  /** What a claim may still take of each endpoint this dispatcher knows: at most `perClaim`, within the cap. */
  function roomPerEndpoint(): Map<string, number> {
    const room = new Map<string, number>();
    for (const ep of new Set([...claimedPer.keys(), ...busy.keys(), ...reserved.keys()])) {
      const taken = (claimedPer.get(ep) ?? 0) + (busy.get(ep) ?? 0) + (reserved.get(ep) ?? 0);
      room.set(ep, Math.max(0, Math.min(perClaim, perEndpointCap - taken)));
    }
    return room;
  }

  const deliverer = createDeliverer({
    queue, attempt, keyring, recorder, clock, random, config, log, observe,
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

  async function claimOnce(limit: number): Promise<number> {
    const leaseToken = `${id}:${++seq}`;
    const mark = deliverer.startRead(); // the claim reads the endpoints too
    const room = roomPerEndpoint();
    for (const [ep, n] of room) bump(reserved, ep, n);
    reservedRows += limit;
    let claim;
    try {
      claim = await queue.claim({
        leaseToken, limit, leaseMs: config.leaseMs, now: clock.now(), perEndpoint: perClaim,
        // the claim counts held rows against `perClaim`: an endpoint with room r counts as holding perClaim - r
        busyEndpoints: new Map([...room].map(([ep, n]) => [ep, perClaim - n])),
        skipEndpoints: [...restingNow(), ...[...room].filter(([, n]) => n === 0).map(([ep]) => ep)],
        inFlight: [...held.keys()],
      });
    } finally {
      for (const [ep, n] of room) bump(reserved, ep, -n);
      reservedRows -= limit;
    }
    const { rows, endpoints, events } = claim;
    if (!rows.length) return 0;
    if (!running) {
      // Stopping meanwhile: give the rows back now rather than when their lease runs out.
      await queue.release(rows.map((r) => r.id), leaseToken).catch(() => undefined);
      return 0;
    }
    for (const r of rows) held.set(r.id, null);
    deliverer.claimed(endpoints, rows.map((r) => r.endpoint_id), mark);
    // An endpoint found unreachable while this claim was on the wire rests now: its rows go back untried.
    const restingNowSet = new Set(restingNow());
    const back: Job[] = [];
    for (const d of rows) {
      const job = { d, leaseToken, ev: events.get(d.event_id), since: mark };
      if (restingNowSet.has(d.endpoint_id)) {
        back.push(job);
        continue;
      }
      const jobs = ready.get(d.endpoint_id) ?? [];
      jobs.push(job);
      ready.set(d.endpoint_id, jobs);
      bump(claimedPer, d.endpoint_id, 1);
      waiting++;
    }
    if (back.length) void giveBack(back);
    pump(mark);
    return rows.length;
  }

  /** Rows a new claim may take: up to a batch, within `concurrency` plus a batch held in all. */
  const freeRows = () => Math.min(config.concurrency + config.batchSize - sending - waiting - reservedRows, config.batchSize);

  function startClaim(limit: number): Promise<number> {
    const run = claimOnce(limit).then(
      (n) => {
        // A full batch: more may be due right now. A wake-up that found the claims on the wire
        // may name rows committed after they read: look again.
        if (n === limit || wokenMeanwhile) {
          wokenMeanwhile = false;
          void tick();
        }
        return n;
      },
      (err: unknown) => {
        log.error({ err: err instanceof Error ? err.message : String(err) }, "claiming deliveries failed; the poll will try again");
        return 0;
      },
    );
    claims.add(run);
    void run.finally(() => (claims.delete(run), settled()));
    return run;
  }

  /** Stopping: rows claimed but not started go back to the queue now rather than when their lease ends. */
  async function releaseWaiting(): Promise<void> {
    const jobs = [...ready.values()].flat();
    ready.clear();
    claimedPer.clear();
    waiting = 0;
    await giveBack(jobs);
  }

  /**
   * Starts a claim if there is room for one (see below). Resolves with the rows it claimed, or
   * with those of the claims already on the wire when it started none.
   */
  function tick(): Promise<number> {
    if (!running) return Promise.resolve(0);
    const free = freeRows();
    // Nothing claimed and waiting: claim at once, for latency. Otherwise the rows waiting cover a
    // claim's round trip: claim (a second one if one is on the wire) once half a batch is free.
    const quiet = claims.size === 0 && waiting === 0;
    if (claims.size < MAX_CLAIMS && free > 0 && (quiet || free >= config.batchSize / 2)) return startClaim(free);
    if (claims.size) wokenMeanwhile = true;
    return Promise.all([...claims]).then((ns) => ns.reduce((a, b) => a + b, 0));
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
        await Promise.allSettled([...claims]);
        await releaseWaiting();
        await Promise.allSettled([...held.values()]);
        await recorder.flush();
      })();
      return stopping;
    },
    claimNow: () => tick(),
    idle() {
      if (!claims.size && !held.size) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
    drain(opts) {
      if (!running) return Promise.reject(new Error("dispatcher is not running"));
      return drainQueue({ dispatcher, queue, clock }, opts);
    },
  };
  return dispatcher;
}
