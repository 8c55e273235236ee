// "Wait until the queue is worked off": what tests (and an operator's graceful hand-over) ask of
// a running dispatcher. Built only on the dispatcher's public surface and the queue's state.
import type { DeliveriesQueueRepo } from "../repos/deliveries-queue.repo.js";
import type { Clock } from "./clock.js";
import type { Dispatcher } from "./dispatcher.js";

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

export async function drainQueue(
  { dispatcher, queue, clock }: { dispatcher: Pick<Dispatcher, "idle" | "claimNow">; queue: Pick<DeliveriesQueueRepo, "state">; clock: Clock },
  { untilSettled = false, timeoutMs = 30_000, advance }: DrainOptions = {},
): Promise<void> {
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
    const { nextAt } = await queue.state();
    if (!nextAt) return;
    const wait = nextAt.getTime() - clock.now().getTime();
    if (wait > 0) {
      if (!untilSettled) return;
      if (advance) advance(wait + 1);
      else await pause(Math.min(wait + 1, SETTLE_RECHECK_MS));
      continue;
    }
    // Due, yet nothing claimable by us (per-endpoint cap, or a row another dispatcher just
    // took): look again shortly rather than spin.
    if ((await within(dispatcher.claimNow(), "claiming")) === 0) await pause(CLAIM_RECHECK_MS);
  }
}
