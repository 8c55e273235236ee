// Clocks for tests. The service runs on one clock kept in step with the database's
// (src/clock/database-clock.ts); tests hand the composition root a clock they can move forward
// (`clock: (database) => adjustableClock(database)`), so retry delays, token lifetimes, grace
// periods and housekeeping's days are skipped instead of slept through. Test-only: nothing here
// is on a production interface.
import { realTimeout, type Clock, type TimerHandle } from "../../src/clock/clock.js";

export interface AdjustableClock extends Clock {
  /** Moves this clock `ms` ahead and fires every timer that is now due. */
  advance(ms: number): void;
  /** How far this clock has been moved ahead of its base. */
  aheadMs(): number;
}

interface PendingTimer {
  due: number;
  fn: () => void;
  real: NodeJS.Timeout | null;
}

/** This process's real time as a Clock (tests run beside their database). */
export const realClock = (): Clock => ({ now: () => new Date(), setTimeout: realTimeout });

/** A clock that always says `at` (housekeeping runs judged at a chosen moment); its timers are real. */
export const fixedClock = (at: Date): Clock => ({ now: () => new Date(at), setTimeout: realTimeout });

/**
 * `base` (real time by default) plus an offset that only grows: I/O (sockets, the database) keeps
 * running at its own pace, while waits scheduled on this clock can be skipped by `advance`.
 */
export function adjustableClock(base: Clock = realClock()): AdjustableClock {
  let offset = 0;
  const timers = new Set<PendingTimer>();
  const now = () => base.now().getTime() + offset;
  const fire = (t: PendingTimer) => {
    if (!timers.delete(t)) return;
    if (t.real) clearTimeout(t.real);
    t.fn();
  };
  const arm = (t: PendingTimer, ms: number) => {
    if (t.real) clearTimeout(t.real);
    t.real = setTimeout(() => fire(t), Math.max(0, ms));
    t.real.unref();
  };
  return {
    now: () => new Date(now()),
    aheadMs: () => offset,
    setTimeout(fn, ms): TimerHandle {
      const t: PendingTimer = { due: now() + Math.max(0, ms), fn, real: null };
      timers.add(t);
      arm(t, ms);
      return {
        cancel() {
          timers.delete(t);
          if (t.real) clearTimeout(t.real);
        },
      };
    },
    advance(ms) {
      offset += ms;
      const at = now();
      for (const t of [...timers].sort((a, b) => a.due - b.due)) {
        if (t.due <= at) fire(t);
        else arm(t, t.due - at); // still pending: re-armed for what is left of it on the moved clock
      }
    },
  };
}
