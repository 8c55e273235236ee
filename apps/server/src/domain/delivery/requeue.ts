// Queuing a delivery again by hand: a manual retry of one delivery, or the recovery of an
// endpoint's failed deliveries in a window (docs/delivery.md#manual-retry-and-recovery). Either
// asks for one attempt now, outside the schedule; what follows it is decided by outcome.ts
// (oneShot). Which statuses may be queued again is a Record over every status, so a new status
// must say.
import type { AttemptTrigger } from "@audit-review/api-types/internal";
import { ALL_STATUSES, type DeliveryStatus } from "./status.js";

/** A manual retry of a delivery in each status: queued again, or refused while an attempt is still due. */
const MANUAL_RETRY: Record<DeliveryStatus, "requeue" | "in_progress"> = {
  pending: "in_progress",
  retrying: "in_progress",
  succeeded: "requeue", // a resend
  failed: "requeue",
};

/** Whether a recovery of the endpoint's deliveries takes one in this status. */
const RECOVERABLE: Record<DeliveryStatus, boolean> = {
  pending: false,
  retrying: false,
  succeeded: false,
  failed: true,
};

const statuses = (pick: (s: DeliveryStatus) => boolean) => ALL_STATUSES.filter(pick);

/** The columns a delivery queued again by hand is written with; it holds no lease. */
export interface Requeue {
  /** only a delivery in one of these is queued again (checked in the statement that writes it) */
  from: readonly DeliveryStatus[];
  status: "pending";
  next_attempt_at: Date;
  next_trigger: Extract<AttemptTrigger, "manual">;
  at: Date;
}

const requeue = (from: readonly DeliveryStatus[], at: Date): Requeue => ({ from, status: "pending", next_attempt_at: at, next_trigger: "manual", at });

/** A manual retry at `at` (POST …/retry). */
export const manualRetry = (at: Date): Requeue => requeue(statuses((s) => MANUAL_RETRY[s] === "requeue"), at);

/** A recovery at `at` (POST …/recover): the endpoint's failed deliveries in the window. */
export const recovery = (at: Date): Requeue => requeue(statuses((s) => RECOVERABLE[s]), at);
