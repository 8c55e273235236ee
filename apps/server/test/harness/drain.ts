// "Wait until the queue is worked off": what tests ask of a running dispatcher, built only on its
// public surface (`idle`, `claimNow`) and the queue's rows. Test-only, so it lives here and not
// on the production dispatcher.
import type { Deps } from "../../src/deps.js";

export interface DrainOptions {
  /** Also wait for retries scheduled in the future, until no row is pending or retrying. */
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
const CLAIM_RECHECK_MS = 10;

// How long until the next row becomes claimable (due and not leased), judged as the claim judges
// it: by the database's clock moved by the engine clock's lead (repos/deliveries-queue.repo.ts).
const NEXT_CLAIMABLE = `
SELECT EXTRACT(EPOCH FROM min(GREATEST(next_attempt_at, COALESCE(locked_until, next_attempt_at)))
         - (now() + $1::float8 * interval '1 millisecond')) * 1000 AS wait_ms
  FROM webhook_deliveries
 WHERE status IN ('pending', 'retrying')`;

/** Resolves once nothing is due or in flight (`untilSettled`: nothing pending or retrying at all). */
export async function drainDispatcher(
  { dispatcher, db, clock }: Pick<Deps, "dispatcher" | "db" | "clock">,
  { untilSettled = false, timeoutMs = 30_000, advance }: DrainOptions = {},
): Promise<void> {
  if (!dispatcher) throw new Error("drain needs a process with its dispatcher on");
  // The deadline is real time: a test that advances the clock still gives up after timeoutMs.
  const deadline = Date.now() + timeoutMs;
  const within = <T>(p: Promise<T>, what: string) => {
    const left = deadline - Date.now();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`dispatcher drain timed out ${what}`)), Math.max(0, left))));
    return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
  };
  const pause = (ms: number) => within(new Promise((resolve) => setTimeout(resolve, ms)), "waiting for due deliveries");
  for (;;) {
    await within(dispatcher.idle(), "with deliveries in flight");
    const [row] = await db.query<{ wait_ms: string | number | null }>(NEXT_CLAIMABLE, [clock.aheadMs?.() ?? 0]);
    if (row?.wait_ms == null) return;
    const wait = Number(row.wait_ms);
    if (wait > 0) {
      if (!untilSettled) return;
      if (advance) advance(Math.ceil(wait) + 1);
      else await pause(Math.min(Math.ceil(wait) + 1, SETTLE_RECHECK_MS));
      continue;
    }
    // Due, yet nothing claimable by us (per-endpoint cap, or a row another dispatcher just
    // took): look again shortly rather than spin.
    if ((await within(dispatcher.claimNow(), "claiming")) === 0) await pause(CLAIM_RECHECK_MS);
  }
}
