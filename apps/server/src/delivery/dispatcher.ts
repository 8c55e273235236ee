// The delivery engine, and its only claim loop. It decides when each step runs and how many at
// once: claim (repos/deliveries-queue.repo.ts) → hold (slots.ts, lease-keeper.ts) → prepare
// (prepare.ts) → send through the endpoint's transport (transports/: HTTPS, or a webhook
// listener's stream) → decide (outcome.ts) → record (recorder.ts). Every delivery, whatever its
// destination, goes through here. Any number of dispatchers, in any number of processes, can
// share one database: rows are leased with FOR UPDATE SKIP LOCKED, the leases of the rows a
// dispatcher holds (waiting or attempted) are renewed while it holds them (lease-keeper.ts),
// outcomes are recorded only under the lease that claimed them, and a crashed dispatcher's rows
// come back when its leases run out (at-least-once; receivers dedupe on `webhook-id`). How many
// rows wait, are sent and are recorded at once is slots.ts's to count.
//
// A webhook listener's rows are claimed only by the process holding its stream (the claim's
// scope). An API process that runs no dispatcher for everyone (ARS_DISPATCHER=false) still runs
// this one with the scope "listeners": it claims nothing unless it holds a stream.
//
// Work arrives by wake-up (the queue signal: in-process at once, LISTEN/NOTIFY from other
// processes), by a timer set for the earliest retry this dispatcher scheduled, and by a poll
// that catches whatever the other two miss.
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { DeliveryConfig } from "../config.js";
import type { Database } from "../db/client.js";
import { every, type Clock, type TimerHandle } from "../clock/clock.js";
import type { Logger } from "../lib/logger.js";
import type { SecretBox } from "../lib/secret-box.js";
import { deliveriesQueueRepo, type ClaimScope, type OutcomeRecord, type RecordResult } from "../repos/deliveries-queue.repo.js";
import { createAttempt } from "./attempt.js";
import { mayLeaveRows } from "./claim-coverage.js";
import { createDeliverer, type Job } from "./deliver.js";
import type { EndpointChanges } from "./endpoint-changes.js";
import { createKeyring } from "./keyring.js";
import { createLeaseKeeper, type LeasedRow } from "./lease-keeper.js";
import { noObserver, type DeliveryObserver } from "./observer.js";
import type { QueueSignal } from "./queue-signal.js";
import { createReceiverAuth } from "./receiver-auth.js";
import { createRecorder } from "./recorder.js";
import type { Sender } from "./sender.js";
import { createSlots, type SlotRow, type SlotStats } from "./slots.js";
import type { ListenerTransport } from "./transports/listener.js";
import { routedSender } from "./transports/route.js";

/** Rows an endpoint may have claimed, in multiples of its concurrency (sending and waiting together). */
const AHEAD = 3;
/** Claims on the wire at once. With AHEAD, claims of `perEndpoint` rows each stay within the cap. */
const MAX_CLAIMS = 2;
/** Full record batches of outcomes not yet recorded beyond which claiming holds back (backpressure). */
const UNRECORDED_BATCHES = 2;
/** How often attempts on the wire are looked at, in parts of `slowAttemptMs`. */
const SLOW_SWEEPS = 4;
/** At most one log line a minute says that rate limits held deliveries back (they are counted every time). */
const THROTTLE_LOG_EVERY_MS = 60_000;
/**
 * Below this, a database pause of half a lease (a failover, a long lock) drops the rows waiting
 * and may let another dispatcher send a row being attempted again (docs/delivery.md#leases).
 */
const MIN_SAFE_LEASE_MS = 10_000;

export interface DispatcherOptions {
  db: Database;
  logger: Logger;
  /** the HTTPS transport: the only way out to the network */
  sender: Sender;
  /** the webhook-listener transport: the streams this process holds */
  listeners: Pick<ListenerTransport, "send" | "heldStreams" | "onDisconnect">;
  /** "all" claims every endpoint's rows; "listeners" only those of the streams this process holds */
  scope: ClaimScope["kind"];
  secretBox: SecretBox;
  signal: QueueSignal;
  /** endpoints updated, deleted or rotated: what is cached of them is dropped */
  endpointChanges: Pick<EndpointChanges, "subscribe">;
  config: DeliveryConfig;
  clock: Clock;
  random?: () => number;
  /** Told what the engine does (the metrics); nobody by default. */
  observe?: DeliveryObserver;
  /** Prefix of this dispatcher's lease tokens (default: host, pid and a random suffix). */
  id?: string;
}

export interface Dispatcher {
  readonly id: string;
  /** "all": every endpoint's deliveries; "listeners": only those of the streams this process holds */
  readonly scope: ClaimScope["kind"];
  start(): void;
  /** Stops claiming, lets in-flight attempts finish and record, gives back claimed rows not yet started. */
  stop(): Promise<void>;
  /**
   * What this dispatcher holds now (`held` counts claims on the wire too: 0 means nothing is
   * claimed, sent or being recorded), and the most it may hold (`maxHeld`, however slow
   * recording is). `releasing` counts rows no longer held but still leased to it while they are
   * given back: until that commits, no dispatcher can claim them.
   */
  stats(): SlotStats & { maxHeld: number; releasing: number };
}

/** A claimed row while this dispatcher holds it. */
interface HeldRow extends SlotRow, LeasedRow {
  job: Job;
  /** when its attempt started (engine clock, ms) */
  startedAt?: number;
}

export function createDispatcher({
  db, logger, sender: https, listeners, scope, secretBox, signal, endpointChanges, config, clock, random = Math.random,
  id = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`, observe = noObserver,
}: DispatcherOptions): Dispatcher {
  const queue = deliveriesQueueRepo(db);
  const sender = routedSender(https, listeners);
  const receiverAuth = createReceiverAuth({ sender, secretBox, now: () => clock.now().getTime(), maxTokenResponseBytes: config.maxResponseBytes });
  const attempt = createAttempt({ sender, receiverAuth, clock });
  const keyring = createKeyring(secretBox);
  const recorder = createRecorder<OutcomeRecord, RecordResult>({
    write: (batch) => (observe.recordBatch(batch.length), queue.recordBatch(batch, config.failingDisableAfterMs)),
    keyOf: (o) => o.deliveryId, log: logger.child({ component: "recorder" }),
    clock, maxBatch: config.recordBatchSize, maxDelayMs: config.recordDelayMs,
  });
  const log = logger.child({ component: "dispatcher", dispatcher: id });

  // Up to `MAX_CLAIMS` claims are in flight at once: the next starts while the last is still on
  // the wire once a low-water mark of free rows is reached, so sending never waits on one claim.
  const perClaim = config.perEndpointConcurrency;
  const maxUnrecorded = UNRECORDED_BATCHES * config.recordBatchSize;
  // as many rows of slow receivers as the shared slots hold: the most held at once doubles at worst
  const slowLane = config.concurrency;
  const slots = createSlots<HeldRow>({
    concurrency: config.concurrency, perEndpoint: perClaim, ahead: AHEAD, batchSize: config.batchSize, maxUnrecorded, slowLane,
  });
  const maxHeld = config.concurrency + config.batchSize + maxUnrecorded + slowLane;
  const runs = new Set<Promise<void>>(); // started rows, until recorded
  const releases = new Set<Promise<void>>(); // rows being given back
  let releasing = 0; // how many rows those are
  const resting = new Map<string, number>(); // endpoint → until when it is not claimed (unreachable)
  let running = false;
  const claims = new Set<Promise<number>>(); // claims on the wire
  // a wake-up came while claims were on the wire and started none, or a claim could not see rows
  // queued before the day it read from (Claim.lookAgain): claim again once they are back
  let wokenMeanwhile = false;
  let seq = 0;
  // Whether the claims may have left due rows that a freed slot could take (claim-coverage.ts):
  // set by any claim that stopped short, cleared only by one sent after it that did not.
  let leftBehind = true;
  let leftBehindBy = 0; // the claim that last set it
  let poll: TimerHandle | null = null;
  let slowSweep: TimerHandle | null = null;
  let slowLaneFullLoggedAt = -Infinity;
  let unsubscribe: (() => void) | null = null;
  let stopping: Promise<void> | null = null;
  let unwatch: (() => void) | null = null;
  const wakeTimers = new Set<TimerHandle>();
  // Rate-limited endpoints (their `rate_limit`, as the last claim that took their rows read it).
  // The claim paces them (domain/delivery/throttle.ts); here they are only kept from piling up
  // rows that would wait for a sending slot and then leave together, faster than their pace.
  const paced = new Set<string>();
  // One wake-up for the throttles at a time: the earliest a claim asked for.
  let throttleWake: { at: number; timer: TimerHandle } | null = null;
  let throttleLog = { at: -Infinity, heldBack: 0 };

  const keeper = createLeaseKeeper<HeldRow>({
    queue, clock, leaseMs: config.leaseMs, log,
    held: () => slots.held(),
    afterRenewal(lost) {
      // A waiting row that lost its lease, or whose lease could not be renewed in time, is
      // never sent: another dispatcher may have it by now, or will once its lease runs out.
      // (A row whose outcome is being recorded ends its own lease: not a loss.)
      const gone = new Set(lost);
      const dropped = slots.takeWaiting((r) => gone.has(r) || !keeper.covers(r));
      const lostSending = lost.filter((r) => slots.stateOf(r.id) === "sending").length;
      if (lostSending || dropped.length) {
        log.warn({ lost_while_sending: lostSending, dropped_waiting: dropped.length }, "delivery leases lost or running short: waiting rows dropped unsent");
      }
      if (dropped.length) {
        observe.rowsDropped(dropped.length);
        void giveBack(dropped);
        void tick();
      }
    },
  });

  /** A retry due before the next poll gets its own timer, so short delays are kept to the millisecond. */
  function wakeUpAt(at: Date): void {
    const wait = at.getTime() - clock.now().getTime();
    if (!running || wait > config.pollIntervalMs) return;
    const t = clock.setTimeout(() => (wakeTimers.delete(t), tick()), wait + 1);
    wakeTimers.add(t);
  }

  /**
   * A claim found rate-limited endpoints that may be claimed again in `waitMs` (on the database's
   * clock, handed over as a delay so the two clocks are never compared): claim then. Every claim
   * asks anew, so one timer, the earliest, serves them all.
   */
  function wakeForThrottle(waitMs: number): void {
    const at = clock.now().getTime() + waitMs;
    if (!running || waitMs > config.pollIntervalMs || (throttleWake && throttleWake.at <= at)) return;
    throttleWake?.timer.cancel();
    const timer = clock.setTimeout(() => {
      if (throttleWake?.timer === timer) throttleWake = null;
      void tick();
    }, waitMs + 1);
    throttleWake = { at, timer };
  }

  function heldBackByThrottles(endpoints: number): void {
    if (!endpoints) return;
    observe.throttled(endpoints);
    throttleLog.heldBack += endpoints;
    const now = clock.now().getTime();
    if (now - throttleLog.at < THROTTLE_LOG_EVERY_MS) return;
    log.info({ held_back: throttleLog.heldBack }, "deliveries wait for their endpoints' rate_limit (counted in ars_deliveries_throttled_total)");
    throttleLog = { at: now, heldBack: 0 };
  }

  /** Rate-limited endpoints with rows waiting here for a slot: not claimed again until those are sent. */
  function pacedWaiting(): string[] {
    if (!paced.size) return [];
    const waiting = new Set<string>();
    for (const r of slots.held()) if (paced.has(r.endpointId) && slots.stateOf(r.id) === "waiting") waiting.add(r.endpointId);
    return [...waiting];
  }

  /**
   * An unreachable endpoint is not claimed until its rest is over, and the rows claimed ahead for
   * it go back to the queue untried: sent now they would only fail the same way, and held they
   * would take room from the other endpoints' claims.
   */
  function rest(endpointId: string, at: Date): void {
    resting.set(endpointId, at.getTime() + config.unreachableRestMs);
    wakeUpAt(new Date(at.getTime() + config.unreachableRestMs));
    const rows = slots.takeWaitingOf(endpointId);
    if (rows.length) void giveBack(rows);
  }

  /** Releases claimed rows that will not be started (they are no longer held). */
  function giveBack(rows: readonly HeldRow[]): Promise<void> {
    const byLease = new Map<string, HeldRow[]>();
    for (const r of rows) byLease.set(r.leaseToken, [...(byLease.get(r.leaseToken) ?? []), r]);
    const done = Promise.all([...byLease].map(([leaseToken, held]) => queue.release(held, leaseToken).catch(() => undefined))).then(() => undefined);
    releases.add(done);
    releasing += rows.length;
    return done.finally(() => {
      releases.delete(done);
      releasing -= rows.length;
    });
  }

  /** Endpoints not to claim now: resting after they could not be reached. */
  function restingNow(): string[] {
    const now = clock.now().getTime();
    for (const [ep, until] of resting) if (until <= now) resting.delete(ep);
    return [...resting.keys()];
  }

  // A listener's stream ended: the rows waiting to go down it go back untried (a stream that
  // connects again, here or in another process, claims them then).
  listeners.onDisconnect((listenerId) => {
    const rows = slots.takeWaitingOf(listenerId);
    if (rows.length) void giveBack(rows);
  });

  const deliverer = createDeliverer({
    queue, attempt, keyring, recorder, clock, random, config, log, observe,
    hooks: {
      attemptOver(deliveryId, endpointId) {
        slots.attemptOver({ id: deliveryId, endpointId });
        pump();
        // a freed slot claims only where rows may be waiting; new rows wake the engine themselves
        if (leftBehind) void tick();
      },
      unreachable: (endpointId, at) => config.unreachableRestMs > 0 && rest(endpointId, at),
      retryAt: wakeUpAt,
      queued: () => signal.notify(),
    },
  });

  /**
   * Starts waiting rows while there are slots (slots.ts). Rows of the claim under `claimMark`
   * start on that claim's endpoint read; a row that waited for its slot reads its endpoint again
   * now, so a disable, delete or rotation committed while it waited is seen at send time (rows of
   * one endpoint starting together share that read). A row whose lease runs short is not sent.
   */
  function pump(claimMark?: number): void {
    if (!running) return;
    const floor = deliverer.nextRead();
    const dropped: HeldRow[] = [];
    const startable = slots.startable();
    const startedAt = startable.length ? clock.now().getTime() : 0;
    for (const row of startable) {
      if (!keeper.covers(row)) {
        slots.done(row);
        dropped.push(row);
        continue;
      }
      const { job } = row;
      row.startedAt = startedAt;
      if (job.since !== claimMark) job.since = floor;
      const run = deliverer.deliver(job)
        // The row keeps its lease and is tried again once the lease runs out.
        .catch((err: unknown) => log.error({ delivery_id: row.id, endpoint_id: row.endpointId, err: err instanceof Error ? err.message : String(err) }, "delivery failed unexpectedly"))
        .finally(() => {
          const heldBack = slots.stats().unrecorded > maxUnrecorded;
          slots.done(row);
          runs.delete(run);
          // claims held back by the recording backlog may go again
          if (heldBack) void tick();
        });
      runs.add(run);
    }
    if (dropped.length) {
      log.warn({ dropped: dropped.length }, "delivery leases running short: rows dropped unsent");
      observe.rowsDropped(dropped.length);
      // given back, they are due again: claim them under a fresh lease (no attempt's end will)
      void giveBack(dropped).then(() => {
        leftBehind = true;
        void tick();
      });
    }
  }

  /**
   * Attempts on the wire for `slowAttemptMs` move their endpoints to the slow lane (slots.ts): a
   * receiver that takes seconds would otherwise hold its slots, and the rows claimed ahead for
   * them, for as long as each attempt runs. What they free goes to the other endpoints at once.
   */
  function sweepSlow(): void {
    const before = clock.now().getTime() - config.slowAttemptMs;
    let moved = 0;
    for (const row of slots.sendingOldestFirst()) {
      if ((row.startedAt ?? Infinity) > before) break;
      slots.slow(row);
      moved++;
    }
    if (!moved) return;
    const beyond = slots.beyondSlowLane();
    if (beyond > 0 && before - slowLaneFullLoggedAt >= THROTTLE_LOG_EVERY_MS) {
      slowLaneFullLoggedAt = before;
      log.warn({ slow_lane: slowLane, beyond_lane: beyond }, "the slow lane is full: more slow receivers' rows now take slots of the others (ars_delivery_slow_lane_rows)");
    }
    pump();
    void tick();
  }

  /** A held row claimed again by this dispatcher: its outcome and renewals go under the newer lease. */
  function adopt(mine: HeldRow, again: HeldRow): void {
    mine.leaseToken = again.leaseToken;
    mine.job.leaseToken = again.leaseToken;
    mine.leaseUntil = again.leaseUntil;
  }

  async function claimOnce(limit: number, claimScope: ClaimScope): Promise<number> {
    const claimSeq = ++seq;
    const leaseToken = `${id}:${claimSeq}`;
    const mark = deliverer.startRead(); // the claim reads the endpoints too
    const { room, release } = slots.reserve(limit);
    const skippedPaced = pacedWaiting();
    const sentAt = clock.now().getTime();
    let claim;
    try {
      claim = await queue.claim({
        leaseToken, limit, leaseMs: config.leaseMs, now: new Date(sentAt), scope: claimScope, perEndpoint: perClaim,
        // the claim counts held rows against `perClaim`: an endpoint with room r counts as holding perClaim - r
        busyEndpoints: new Map([...room].map(([ep, n]) => [ep, perClaim - n])),
        skipEndpoints: [...restingNow(), ...skippedPaced, ...[...room].filter(([, n]) => n === 0).map(([ep]) => ep)],
        inFlight: slots.held().map((r) => r.id),
      });
    } finally {
      release();
    }
    const { rows, endpoints, events, throttle } = claim;
    const short = mayLeaveRows(claim, { limit, perEndpoint: perClaim, room, skippedUntilSent: skippedPaced.length > 0 });
    if (short) {
      leftBehind = true;
      leftBehindBy = claimSeq;
    } else if (claimSeq > leftBehindBy) leftBehind = false;
    // rows queued before the day this claim read from: the next claim sees them (startClaim looks again)
    if (claim.lookAgain) wokenMeanwhile = true;
    heldBackByThrottles(throttle.heldBack);
    if (throttle.waitMs !== null) wakeForThrottle(throttle.waitMs);
    for (const ep of endpoints.values()) {
      if (ep.rate_limit !== null) paced.add(ep.id);
      else paced.delete(ep.id);
    }
    if (!rows.length) return 0;
    const held = rows.map((d): HeldRow => ({
      id: d.id, endpointId: d.endpoint_id, createdAt: d.created_at, leaseToken, leaseUntil: keeper.until(sentAt),
      job: { d, leaseToken, ev: events.get(d.event_id), since: mark },
    }));
    // A claim sent before this dispatcher took a row cannot have excluded it, and may take it
    // again once its lease ran out (a database out of reach, say): the row is still this
    // dispatcher's, now under the newer lease, and it is not sent twice.
    const fresh = held.filter((r) => {
      const mine = slots.get(r.id);
      if (mine) adopt(mine, r);
      return !mine;
    });
    if (!running) {
      // Stopping meanwhile: give the rows back now rather than when their lease runs out.
      await giveBack(fresh);
      return 0;
    }
    deliverer.claimed(endpoints, rows.map((r) => r.endpoint_id), mark);
    // An endpoint found unreachable while this claim was on the wire rests now: its rows go back untried.
    const restingNowSet = new Set(restingNow());
    const back: HeldRow[] = [];
    for (const r of fresh) {
      if (restingNowSet.has(r.endpointId)) back.push(r);
      else slots.add(r);
    }
    if (back.length) void giveBack(back);
    pump(mark);
    return rows.length;
  }

  function startClaim(limit: number, claimScope: ClaimScope): Promise<number> {
    const run = claimOnce(limit, claimScope).then(
      (n) => {
        // A full batch: more may be due right now. A wake-up that found the claims on the wire
        // may name rows committed after they read, and a claim may have read from too late a
        // day: look again.
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
    void run.finally(() => claims.delete(run));
    return run;
  }

  /**
   * Starts a claim if there is room for one (see below). Resolves with the rows it claimed, or
   * with those of the claims already on the wire when it started none.
   */
  function tick(): Promise<number> {
    if (!running) return Promise.resolve(0);
    const claimScope: ClaimScope = { kind: scope, streams: listeners.heldStreams() };
    // a process holding no stream and claiming for nobody else asks the database nothing
    if (scope === "listeners" && !claimScope.streams.length) return Promise.resolve(0);
    const free = slots.freeRows();
    // Nothing claimed and waiting: claim at once, for latency. Otherwise the rows waiting cover a
    // claim's round trip: claim (a second one if one is on the wire) once half a batch is free.
    const quiet = claims.size === 0 && slots.stats().waiting === 0;
    if (claims.size < MAX_CLAIMS && free > 0 && (quiet || free >= config.batchSize / 2)) return startClaim(free, claimScope);
    if (claims.size) wokenMeanwhile = true;
    // no room for a claim now: the next freed slot claims for this wake-up
    else leftBehind = true;
    return Promise.all([...claims]).then((ns) => ns.reduce((a, b) => a + b, 0));
  }

  return {
    id,
    scope,
    start() {
      if (running || stopping) return;
      running = true;
      // Leases are renewed while held, so an attempt may take as long as it takes; what a short
      // lease cannot ride out is the database pausing for half of it.
      if (config.leaseMs < MIN_SAFE_LEASE_MS) log.warn({ lease_ms: config.leaseMs, min_safe_lease_ms: MIN_SAFE_LEASE_MS }, "delivery lease is short: a database pause of half of it drops held rows");
      unsubscribe = signal.onWake(() => void tick());
      unwatch = endpointChanges.subscribe((endpointId) => {
        paced.delete(endpointId);
        deliverer.forget(endpointId);
        keyring.forget(endpointId);
        receiverAuth.forget(endpointId);
      });
      poll = every(clock, config.pollIntervalMs, () => void tick());
      slowSweep = every(clock, Math.max(1, Math.floor(config.slowAttemptMs / SLOW_SWEEPS)), sweepSlow);
      keeper.start();
      void tick();
    },
    stop() {
      stopping ??= (async () => {
        running = false;
        poll?.cancel();
        slowSweep?.cancel();
        for (const t of wakeTimers) t.cancel();
        throttleWake?.timer.cancel();
        unsubscribe?.();
        unwatch?.();
        await Promise.allSettled([...claims]);
        // Rows claimed but not started go back to the queue now rather than when their lease ends.
        await giveBack(slots.takeWaiting());
        // the leases of rows still being attempted are kept until their outcomes are recorded
        await Promise.allSettled([...runs]);
        await recorder.flush();
        await keeper.stop();
        await Promise.allSettled([...releases]);
      })();
      return stopping;
    },
    stats: () => ({ ...slots.stats(), maxHeld, releasing }),
  };
}
