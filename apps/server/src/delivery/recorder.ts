// Step 5 of a delivery: group commit. Outcomes are gathered for a few milliseconds (or until a
// batch is full) and written together, one statement or one transaction per batch instead of one
// commit per delivery. While a batch is being written the next one gathers, so under load the
// batches grow by themselves and at low load an outcome waits at most `maxDelayMs`.
import type { Clock, TimerHandle } from "./clock.js";

export interface RecorderOptions<T, R> {
  /** writes a batch; resolves with one result per item, in order */
  write(batch: T[]): Promise<R[]>;
  clock: Clock;
  maxBatch: number;
  maxDelayMs: number;
  /** batches written at the same time (each holds a connection) */
  maxWrites?: number;
}

export interface Recorder<T, R> {
  /** Resolves once the item's batch is written (rejects when the batch could not be). */
  record(item: T): Promise<R>;
  /** Writes whatever is gathered now and resolves once nothing is left to write. */
  flush(): Promise<void>;
  /** items gathered or being written */
  readonly pending: number;
}

interface Waiting<T, R> {
  item: T;
  resolve(result: R): void;
  reject(err: unknown): void;
}

export function createRecorder<T, R>({ write, clock, maxBatch, maxDelayMs, maxWrites = 2 }: RecorderOptions<T, R>): Recorder<T, R> {
  let gathered: Waiting<T, R>[] = [];
  let timer: TimerHandle | null = null;
  let writing = 0;
  let inWrites = 0;
  const idleWaiters: (() => void)[] = [];

  function settleIdle(): void {
    if (gathered.length || writing) return;
    for (const resolve of idleWaiters.splice(0)) resolve();
  }

  function writeNow(): void {
    timer?.cancel();
    timer = null;
    while (gathered.length && writing < maxWrites) {
      const batch = gathered.slice(0, maxBatch);
      gathered = gathered.slice(batch.length);
      writing++;
      inWrites += batch.length;
      write(batch.map((w) => w.item))
        .then(
          (results) => batch.forEach((w, i) => w.resolve(results[i]!)),
          (err: unknown) => batch.forEach((w) => w.reject(err)),
        )
        .finally(() => {
          writing--;
          inWrites -= batch.length;
          // What gathered meanwhile has waited long enough.
          if (gathered.length) writeNow();
          settleIdle();
        });
    }
  }

  return {
    record(item) {
      return new Promise<R>((resolve, reject) => {
        gathered.push({ item, resolve, reject });
        if (gathered.length >= maxBatch) writeNow();
        else timer ??= clock.setTimeout(writeNow, maxDelayMs);
      });
    },
    flush() {
      if (!gathered.length && !writing) return Promise.resolve();
      const idle = new Promise<void>((resolve) => idleWaiters.push(resolve));
      writeNow();
      return idle;
    },
    get pending() {
      return gathered.length + inWrites;
    },
  };
}
