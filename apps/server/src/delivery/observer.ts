// What the engine tells whoever watches it (the metrics, when they are on). Plain callbacks with
// bounded values only, so the engine knows nothing of how they are counted; the no-op observer
// costs nothing when nobody watches.
import type { DeliveryErrorCode } from "@audit-review/api-types/internal";
import type { DeliveryUpdate } from "../domain/delivery/outcome.js";
import type { DisableReason } from "../domain/delivery/endpoint-health.js";

/** What became of an outcome: the status it stored, or `lease_lost` when another dispatcher had taken the row. */
export type ObservedOutcome = DeliveryUpdate["status"] | "lease_lost";

export interface DeliveryObserver {
  /** An attempt's (or a skipped delivery's) outcome, once the recorder wrote it or found the lease lost. */
  outcome(outcome: ObservedOutcome, errorCode: DeliveryErrorCode | null): void;
  /** An attempt to a receiver ended after `ms`. */
  attempt(ms: number): void;
  /** A delivery's first scheduled attempt started `ms` after the delivery was created with its event. */
  firstAttempt(ms: number): void;
  /** The recorder wrote `size` outcomes in one batch. */
  recordBatch(size: number): void;
  /** An outcome disabled its endpoint. */
  endpointDisabled(reason: DisableReason): void;
  /** Claimed rows given back unsent: their lease was taken or ran short while they waited. */
  rowsDropped(count: number): void;
  /** A claim left the due deliveries of `endpoints` rate-limited endpoints waiting for their limit. */
  throttled(endpoints: number): void;
  /** A delivery of an ordered endpoint is retrying: the endpoint's later deliveries wait for it. */
  orderedHeld(): void;
  /** An operational notification of this type was stored (and queued for the org's operational endpoints). */
  notified(type: string): void;
}

const nothing = () => undefined;

export const noObserver: DeliveryObserver = {
  outcome: nothing,
  attempt: nothing,
  firstAttempt: nothing,
  recordBatch: nothing,
  endpointDisabled: nothing,
  rowsDropped: nothing,
  throttled: nothing,
  orderedHeld: nothing,
  notified: nothing,
};

