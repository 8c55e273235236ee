// The retention rule, its one owner: what a window of N days means for a row, for the partition
// holding it, and for a manual retry or recovery (README, "Retention and housekeeping"; the
// contract's "Retention" section). Events, deliveries and attempts are partitioned by UTC day,
// so rows leave by whole days: a day goes once all of it is older than the window.

export const DAY_MS = 86_400_000;

/** How long before its removal a delivery may no longer be queued again (retry, recovery). */
export const EXPIRY_NOTICE_MS = DAY_MS;

/** The start (00:00 UTC) of the day holding `at`. */
export function dayStart(at: Date): Date {
  return new Date(Math.floor(at.getTime() / DAY_MS) * DAY_MS);
}

export interface Retention {
  readonly days: number;
  /** The first day still inside the window at `now`: every day before it may be removed. */
  firstKeptDay(now: Date): Date;
  /** When housekeeping may remove a row created at `createdAt`: its whole day past the window. */
  removalTime(createdAt: Date): Date;
  /**
   * The oldest creation time a retry or recovery may still revive at `now`: rows created earlier
   * are removed within EXPIRY_NOTICE_MS, and would vanish while (or right after) being re-sent.
   */
  earliestRevivable(now: Date): Date;
}

export function retention(days: number): Retention {
  if (!Number.isInteger(days) || days < 1) throw new RangeError("retention days must be an integer >= 1");
  const window = days * DAY_MS;
  const removalTime = (createdAt: Date) => new Date(dayStart(createdAt).getTime() + DAY_MS + window);
  return {
    days,
    // day D is removed once D + 1 day <= now - window
    firstKeptDay: (now) => new Date(dayStart(new Date(now.getTime() - window)).getTime()),
    removalTime,
    // removalTime(c) - now >= notice  <=>  dayStart(c) >= now - window - 1 day + notice
    earliestRevivable(now) {
      const boundary = now.getTime() - window - DAY_MS + EXPIRY_NOTICE_MS;
      const start = dayStart(new Date(boundary)).getTime();
      return new Date(start === boundary ? start : start + DAY_MS);
    },
  };
}
