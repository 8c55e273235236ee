// Keeps the leases of the rows a dispatcher holds, waiting or being attempted, for as long as it
// holds them (docs/delivery.md#leases): every quarter lease, one statement renews them all by the
// token each was claimed with. A row whose lease is no longer its own is reported lost, and a
// row may only start its attempt while at least half of its lease is left, measured from when
// its claim or last successful renewal was sent: a row whose renewals keep failing is dropped
// before another dispatcher could take it, never sent.
import type { Logger } from "../lib/logger.js";
import type { DeliveriesQueueRepo, HeldLease } from "../repos/deliveries-queue.repo.js";
import { every, type Clock, type TimerHandle } from "../clock/clock.js";

export interface LeasedRow extends HeldLease {
  /** until when (engine clock, ms) the lease surely runs: its claim or last renewal was sent `leaseMs` before */
  leaseUntil: number;
}

export interface LeaseKeeperOptions<R extends LeasedRow> {
  queue: Pick<DeliveriesQueueRepo, "renew">;
  clock: Clock;
  leaseMs: number;
  /** the rows held now */
  held(): readonly R[];
  /** After each renewal, done or failed: the rows found no longer leased under their token. */
  afterRenewal(lost: R[]): void;
  log: Logger;
}

export interface LeaseKeeper {
  start(): void;
  /** Stops renewing; resolves once no renewal is on the wire. */
  stop(): Promise<void>;
  /** The lease of a row whose claim was sent at `sentAt` (engine clock, ms) runs at least until this. */
  until(sentAt: number): number;
  /** Whether enough of the row's lease is left to start its attempt now. */
  covers(row: LeasedRow): boolean;
}

export function createLeaseKeeper<R extends LeasedRow>({ queue, clock, leaseMs, held, afterRenewal, log }: LeaseKeeperOptions<R>): LeaseKeeper {
  // Renewing every quarter lease and starting rows only with half of it left: one renewal may
  // fail (a slow or lost statement) without a row being dropped, and two in a row drop the
  // waiting rows while their leases still run.
  const renewEveryMs = Math.max(1, Math.floor(leaseMs / 4));
  let timer: TimerHandle | null = null;
  let renewing: Promise<void> | null = null;

  async function renew(): Promise<void> {
    const rows = held();
    if (!rows.length) return;
    const sentAt = clock.now().getTime();
    let lost: R[] = [];
    try {
      const { owned, renewed } = await queue.renew(rows, leaseMs, new Date(sentAt));
      for (const r of rows) if (renewed.has(r.id)) r.leaseUntil = Math.max(r.leaseUntil, sentAt + leaseMs);
      lost = rows.filter((r) => !owned.has(r.id));
    } catch (err) {
      log.warn({ rows: rows.length, err: err instanceof Error ? err.message : String(err) }, "renewing delivery leases failed; rows whose lease runs short are dropped, not sent");
    }
    afterRenewal(lost);
  }

  function tick(): void {
    renewing ??= renew().finally(() => (renewing = null));
  }

  return {
    start() {
      timer ??= every(clock, renewEveryMs, tick);
    },
    async stop() {
      timer?.cancel();
      timer = null;
      await renewing;
    },
    until: (sentAt) => sentAt + leaseMs,
    covers: (row) => row.leaseUntil - clock.now().getTime() >= leaseMs / 2,
  };
}
