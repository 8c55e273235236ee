// "Wait until the queue is worked off": what tests ask of a running dispatcher, built only on
// what production offers anyway: its `stats()` (what it holds, as the metrics read it), the
// queue signal that wakes it, and the queue's rows judged by the engine's clock. Test-only, so it
// lives here and not on the production dispatcher.
import type { Deps } from "../../src/deps.js";
import { createDispatcher, type Dispatcher, type DispatcherOptions } from "../../src/delivery/dispatcher.js";
import type { QueueSignal } from "../../src/delivery/queue-signal.js";
import { LIVE_SQL } from "../../src/repos/delivery-sql.js";

export interface DrainOptions {
  /** Also wait for retries scheduled in the future, until no row is pending or retrying at all. */
  untilSettled?: boolean;
  timeoutMs?: number;
  /**
   * With an adjustable clock: jump to the next due time instead of waiting for it (retries,
   * lease expiry). Only where no other live dispatcher holds leases on the same rows.
   */
  advance?: (ms: number) => void;
}

// Not longer than a short recheck: a row may be leased by another live dispatcher that records
// it long before its lease would run out.
const SETTLE_RECHECK_MS = 25;
const RECHECK_MS = 10;

// How long until the next row becomes claimable (due and not leased), judged as the claim judges
// it: by the engine's clock ($1).
const NEXT_CLAIMABLE = `
SELECT EXTRACT(EPOCH FROM min(GREATEST(next_attempt_at, COALESCE(locked_until, next_attempt_at))) - $1::timestamptz) * 1000 AS wait_ms
  FROM webhook_deliveries
 WHERE status IN ${LIVE_SQL}`;

/** Resolves once nothing is due or in flight (`untilSettled`: nothing pending or retrying at all). */
export async function drainDispatcher(
  { dispatcher, db, clock, signal }: Pick<Deps, "dispatcher" | "db" | "clock" | "signal">,
  { untilSettled = false, timeoutMs = 30_000, advance }: DrainOptions = {},
): Promise<void> {
  // The deadline is real time: a test that advances the clock still gives up after timeoutMs.
  const deadline = Date.now() + timeoutMs;
  const pause = async (ms: number, what: string) => {
    if (Date.now() > deadline) throw new Error(`dispatcher drain timed out ${what}`);
    await new Promise((resolve) => setTimeout(resolve, ms));
  };
  for (;;) {
    // something claimed, sent, being recorded or given back (or a claim on the wire): let it finish
    const { held, releasing } = dispatcher.stats();
    if (held > 0 || releasing > 0) {
      await pause(RECHECK_MS, "with deliveries in flight");
      continue;
    }
    const [row] = await db.query<{ wait_ms: string | number | null }>(NEXT_CLAIMABLE, [clock.now()]);
    if (row?.wait_ms == null) return;
    const wait = Number(row.wait_ms);
    if (wait > 0) {
      if (!untilSettled) return;
      if (advance) advance(Math.ceil(wait) + 1);
      else await pause(Math.min(Math.ceil(wait) + 1, SETTLE_RECHECK_MS), "waiting for due deliveries");
      continue;
    }
    // Due and claimable: wake the dispatcher (as a new delivery does) and look again shortly. A
    // row it cannot take (its per-endpoint cap, or another dispatcher's) is simply seen again.
    signal.notify();
    await pause(RECHECK_MS, "waiting for due deliveries to be claimed");
  }
}

export type DispatcherOverrides = Partial<Pick<DispatcherOptions, "db" | "signal" | "config" | "clock" | "id" | "scope">>;

/** Another dispatcher wired like the server's own (its transports, signal, clock), with what a test overrides. */
export function dispatcherFrom(deps: Deps, o: DispatcherOverrides = {}): Dispatcher {
  return createDispatcher({
    db: deps.db, logger: deps.logger, sender: deps.sender, listeners: deps.listeners, scope: "all", secretBox: deps.secretBox,
    signal: deps.signal, endpointChanges: deps.endpointChanges, config: deps.config.delivery, clock: deps.clock, ...o,
  });
}

/** Resolves once the dispatcher holds nothing: no claim on the wire, no row waiting, sent, being recorded or given back. */
export async function idleOf(dispatcher: Dispatcher, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (dispatcher.stats().held > 0 || dispatcher.stats().releasing > 0) {
    if (Date.now() > deadline) throw new Error(`dispatcher ${dispatcher.id} still holds rows after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A queue signal that wakes its dispatchers only when the test fires it (no NOTIFY, no in-process wake-ups from publishing). */
export function manualSignal(): QueueSignal & { fire(): void } {
  const listeners = new Set<() => void>();
  return {
    notify: () => undefined,
    onWake(fn) {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
    close: () => Promise.resolve(),
    fire: () => listeners.forEach((fn) => fn()),
  };
}
