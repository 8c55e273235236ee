// Step 5 of a delivery: group commit. Outcomes are gathered for a few milliseconds (or until a
// batch is full) and written together, one statement or one transaction per batch instead of one
// commit per delivery. While a batch is being written the next one gathers, so under load the
// batches grow by themselves and at low load an outcome waits at most `maxDelayMs`.
//
// An outcome is never dropped (docs/delivery.md#recording-outcomes): one whose write failed (a
// lost connection, a database restart) is written again after a backoff, on whatever connection
// the pool hands out then, until it is written, for as long as the process lives. A lost outcome
// would leave its row leased but unrecorded, and the row would be sent a second time once the
// lease ran out, with the first send missing from the attempt history. Outcomes of one key (one
// delivery) are written in the order they were accepted.
import type { Logger } from "../lib/logger.js";
import type { Clock, TimerHandle } from "../clock/clock.js";

export interface RecorderOptions<T, R> {
  /**
   * Writes a batch; resolves with one settled result per item, in order (a batch may be written
   * in parts that commit or fail on their own). Rejecting fails the whole batch.
   */
  write(batch: T[]): Promise<PromiseSettledResult<R>[]>;
  /** items of one key are written one after the other, in the order they were recorded */
  keyOf(item: T): string;
  clock: Clock;
  log: Logger;
  maxBatch: number;
  maxDelayMs: number;
  /** batches written at the same time (each holds a connection) */
  maxWrites?: number;
  /** the first retry's delay; it doubles up to `maxRetryDelayMs` */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
  /** how long an item may stay unwritten before it is logged as an error (and again at this interval) */
  stuckAfterMs?: number;
}

export interface Recorder<T, R> {
  /** Resolves once the item is written; never rejects: a failed write is tried again until it succeeds. */
  record(item: T): Promise<R>;
  /** Writes whatever is gathered now (retries included, without waiting out their backoff) and resolves once nothing is left to write. */
  flush(): Promise<void>;
  /** items accepted and not yet durably written: gathered, being written, or waiting to be tried again */
  pending(): number;
}

interface Waiting<T, R> {
  item: T;
  key: string;
  /** acceptance order */
  seq: number;
  acceptedAt: number;
  /** failed writes so far */
  failures: number;
  resolve(result: R): void;
}

export const RECORD_RETRY_DELAY_MS = 100;
export const RECORD_MAX_RETRY_DELAY_MS = 5_000;
export const RECORD_STUCK_AFTER_MS = 30_000;

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

export function createRecorder<T, R>({
  write, keyOf, clock, log, maxBatch, maxDelayMs, maxWrites = 2,
  retryDelayMs = RECORD_RETRY_DELAY_MS, maxRetryDelayMs = RECORD_MAX_RETRY_DELAY_MS, stuckAfterMs = RECORD_STUCK_AFTER_MS,
}: RecorderOptions<T, R>): Recorder<T, R> {
  let gathered: Waiting<T, R>[] = []; // ready to be written, in acceptance order
  const backingOff = new Map<TimerHandle, Waiting<T, R>[]>(); // failed, waiting out their backoff
  const busyKeys = new Map<string, number>(); // keys with an item being written or backing off
  let backingOffCount = 0;
  let timer: TimerHandle | null = null;
  let writing = 0;
  let inWrites = 0;
  let seq = 0;
  let lastLoud = -Infinity;
  const idleWaiters: (() => void)[] = [];

  const hold = (w: Waiting<T, R>, by: number) => {
    const n = (busyKeys.get(w.key) ?? 0) + by;
    if (n > 0) busyKeys.set(w.key, n);
    else busyKeys.delete(w.key);
  };

  function settleIdle(): void {
    if (gathered.length || writing || backingOff.size) return;
    for (const resolve of idleWaiters.splice(0)) resolve();
  }

  /** The next batch: gathered items in order, at most one per key, none whose key is still busy. */
  function takeBatch(): Waiting<T, R>[] {
    const batch: Waiting<T, R>[] = [];
    const keys = new Set<string>();
    const left: Waiting<T, R>[] = [];
    let i = 0;
    for (; i < gathered.length && batch.length < maxBatch; i++) {
      const w = gathered[i]!;
      if (!busyKeys.has(w.key) && !keys.has(w.key)) {
        batch.push(w);
        keys.add(w.key);
      } else left.push(w);
    }
    gathered = i < gathered.length ? [...left, ...gathered.slice(i)] : left;
    return batch;
  }

  function writeNow(): void {
    timer?.cancel();
    timer = null;
    while (gathered.length && writing < maxWrites) {
      const batch = takeBatch();
      if (!batch.length) return; // every gathered item waits behind an earlier one of its key
      for (const w of batch) hold(w, 1);
      writing++;
      inWrites += batch.length;
      writeBatch(batch)
        .then(
          (results) => ((inWrites -= batch.length), settleBatch(batch, results)),
          (err: unknown) => ((inWrites -= batch.length), failed(batch, err)),
        )
        .finally(() => {
          writing--;
          // What gathered meanwhile has waited long enough.
          if (gathered.length) writeNow();
          settleIdle();
        });
    }
  }

  /** A write that throws at once fails its batch like one that rejects: nothing is dropped. */
  function writeBatch(batch: Waiting<T, R>[]): Promise<PromiseSettledResult<R>[]> {
    try {
      return write(batch.map((w) => w.item));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  function settleBatch(batch: Waiting<T, R>[], results: PromiseSettledResult<R>[]): void {
    const again: Waiting<T, R>[] = [];
    let error: unknown;
    batch.forEach((w, i) => {
      const r = results[i];
      if (r?.status === "fulfilled") {
        hold(w, -1);
        if (w.failures) log.warn({ failed_writes: w.failures, unwritten_ms: clock.now().getTime() - w.acceptedAt }, "delivery outcome written after its write failed");
        w.resolve(r.value);
      } else {
        again.push(w);
        error = r ? r.reason : new Error("the write returned no result for this outcome");
      }
    });
    if (again.length) failed(again, error);
  }

  /** Keeps the items, still holding their keys, and gathers them again once their backoff is over. */
  function failed(items: Waiting<T, R>[], err: unknown): void {
    const now = clock.now().getTime();
    for (const w of items) w.failures++;
    // a batch mixing new outcomes with old ones backs off as long as its oldest has failed
    const failures = Math.max(...items.map((w) => w.failures));
    const delay = Math.min(maxRetryDelayMs, retryDelayMs * 2 ** (failures - 1));
    const oldest = Math.max(...items.map((w) => now - w.acceptedAt));
    backingOffCount += items.length;
    if (oldest >= stuckAfterMs && now - lastLoud >= stuckAfterMs) {
      lastLoud = now;
      log.error(
        { unwritten: backingOffCount, pending: pending(), oldest_unwritten_ms: oldest, err: message(err) },
        "delivery outcomes cannot be written to the database; they are kept in memory and written as soon as it answers again",
      );
    } else {
      log.warn({ outcomes: items.length, failed_writes: failures, retry_in_ms: delay, err: message(err) }, "writing delivery outcomes failed; trying again");
    }
    const t = clock.setTimeout(() => retry(t), delay);
    backingOff.set(t, items);
  }

  function retry(t: TimerHandle): void {
    const items = backingOff.get(t);
    if (!items) return;
    backingOff.delete(t);
    backingOffCount -= items.length;
    for (const w of items) hold(w, -1);
    // ahead of anything of their keys accepted later
    gathered = [...items, ...gathered].sort((a, b) => a.seq - b.seq);
    writeNow();
    settleIdle();
  }

  function pending(): number {
    return gathered.length + inWrites + backingOffCount;
  }

  return {
    record(item) {
      return new Promise<R>((resolve) => {
        gathered.push({ item, key: keyOf(item), seq: ++seq, acceptedAt: clock.now().getTime(), failures: 0, resolve });
        if (gathered.length >= maxBatch) writeNow();
        else timer ??= clock.setTimeout(writeNow, maxDelayMs);
      });
    },
    flush() {
      if (!gathered.length && !writing && !backingOff.size) return Promise.resolve();
      const idle = new Promise<void>((resolve) => idleWaiters.push(resolve));
      for (const t of [...backingOff.keys()]) {
        t.cancel();
        retry(t);
      }
      writeNow();
      return idle;
    },
    pending,
  };
}
