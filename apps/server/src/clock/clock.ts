// The one source of time every part of the service judges by (leases, due times and retries,
// listener liveness, housekeeping's window, token and rotation expiry). Production runs on the
// database's clock (clock/database-clock.ts), so processes on hosts whose clocks disagree still
// agree on whose lease has run out and which day retention may drop; tests pass a clock they can
// move forward instead of sleeping (test/harness/clock.ts). Nothing below the composition root
// reads the process's wall clock to judge time.

export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  now(): Date;
  /** Calls `fn` once `ms` have passed on this clock. The timer never keeps the process alive. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
}

/** A timer of `ms` real milliseconds (a duration is the same on every clock kept in step with real time). */
export function realTimeout(fn: () => void, ms: number): TimerHandle {
  const t = setTimeout(fn, Math.max(0, ms));
  t.unref();
  return { cancel: () => clearTimeout(t) };
}

/** Runs `fn` every `ms` on `clock` until cancelled. */
export function every(clock: Pick<Clock, "setTimeout">, ms: number, fn: () => void): TimerHandle {
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
