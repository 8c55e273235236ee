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

/** A partition of a table retention empties, as the keep rule sees it. */
export interface RetainedPartition {
  readonly table: "events" | "webhook_deliveries" | "webhook_delivery_attempts";
  /** the first instant it holds; null for a history without a lower bound */
  readonly from: Date | null;
  /** the instant after the last it holds; null for a history it has not bounded yet */
  readonly until: Date | null;
}

export interface RetentionDrops<P extends RetainedPartition> {
  drop: P[];
  /** past the window, kept because deliveries it (or an earlier range) holds are not final */
  keep: P[];
}

// attempts first, then deliveries, then events: no reader ever finds a row whose parent is gone
const DROP_ORDER: Record<RetainedPartition["table"], number> = { webhook_delivery_attempts: 0, webhook_deliveries: 1, events: 2 };

/**
 * Which partitions retention may drop at `now`: those wholly before the window's first kept day,
 * except where deliveries are not final yet. A live delivery keeps its own range of deliveries
 * and of events (the engine still needs the event to send it), and every range of attempts from
 * its range's start on (its attempts started then or later). `holdsLive(p)` tells, for an
 * expired deliveries partition, whether it holds a delivery that is not final.
 */
export function retentionDrops<P extends RetainedPartition>(r: Retention, now: Date, partitions: readonly P[], holdsLive: (p: P) => boolean): RetentionDrops<P> {
  const firstKept = r.firstKeptDay(now).getTime();
  const expired = partitions.filter((p) => p.until !== null && p.until.getTime() <= firstKept).sort((a, b) => DROP_ORDER[a.table] - DROP_ORDER[b.table]);
  const start = (p: P) => p.from?.getTime() ?? -Infinity;
  const held = expired.filter((p) => p.table === "webhook_deliveries" && holdsLive(p));
  const heldRanges = new Set(held.map(start));
  // attempts of a live delivery may have started on any day from its own on
  const attemptsFrom = Math.min(...held.map(start));
  const kept = (p: P) => (p.table === "webhook_delivery_attempts" ? p.until!.getTime() > attemptsFrom : heldRanges.has(start(p)));
  return { drop: expired.filter((p) => !kept(p)), keep: expired.filter(kept) };
}
