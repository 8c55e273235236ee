// The engine's one source of time. Everything that reads the time or waits for it (due times,
// leases, token expiry, rotation grace, retry timers, the poll) takes it from here, so tests can
// move time forward instead of sleeping.

export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  now(): Date;
  /** Calls `fn` once `ms` have passed on this clock. The timer never keeps the process alive. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /**
   * How far this clock runs ahead of real time (0 when absent). Due times and leases are judged
   * by the database's clock plus this, so a test that moves the engine's clock moves them too.
   */
  aheadMs?(): number;
}

export const systemClock: Clock = {
  now: () => new Date(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, Math.max(0, ms));
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
};

/** Runs `fn` every `ms` on `clock` until cancelled. */
export function every(clock: Clock, ms: number, fn: () => void): TimerHandle {
  let handle: TimerHandle;
  let cancelled = false;
  const arm = () => {
    handle = clock.setTimeout(() => {
      if (cancelled) return;
      arm();
      fn();
    }, ms);
  };
  arm();
  return {
    cancel() {
      cancelled = true;
      handle.cancel();
    },
  };
}

export interface AdjustableClock extends Clock {
  /** Moves this clock `ms` ahead of real time and fires every timer that is now due. */
  advance(ms: number): void;
}

/**
 * Real time plus an offset that only grows: I/O (sockets, the database) keeps running at its own
 * pace, while waits the engine schedules (retry delays, token lifetimes, rotation grace) can be
 * skipped by `advance`. Used by tests; the composition root passes `systemClock` otherwise.
 */
interface PendingTimer {
  due: number;
  fn: () => void;
  real: NodeJS.Timeout | null;
}

export function adjustableClock(): AdjustableClock {
  let offset = 0;
  const timers = new Set<PendingTimer>();
  const now = () => Date.now() + offset;
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
    setTimeout(fn, ms) {
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
