// A delivery's statuses and what each means to the lifecycle (docs/delivery.md#states). Every
// table here is a Record over every status, so a new status fails to compile until each one
// says what it does with it; the transitions (outcome.ts, requeue.ts, unavailable.ts,
// fan-out.ts) read their rules from here.
import type { WebhookDeliveryStatus } from "@audit-review/api-types/internal";
import { DELIVERY_STATUSES } from "../../lib/stored-values.js";

export type DeliveryStatus = WebhookDeliveryStatus;

/** Every status, each once (lib/stored-values.ts checks the list against the contract's enum). */
export const ALL_STATUSES: readonly DeliveryStatus[] = DELIVERY_STATUSES;

/** Live: queued for an attempt (the row is the queue). Final: no automatic attempt is left. */
const LIVE: Record<DeliveryStatus, boolean> = {
  pending: true,
  retrying: true,
  succeeded: false,
  failed: false,
};

/** The statuses a dispatcher claims (when due and not leased), housekeeping keeps, and an unusable endpoint fails. */
export const LIVE_STATUSES: readonly DeliveryStatus[] = ALL_STATUSES.filter((s) => LIVE[s]);

/** The statuses no automatic attempt follows. */
export const FINAL_STATUSES: readonly DeliveryStatus[] = ALL_STATUSES.filter((s) => !LIVE[s]);

export const isLive = (s: DeliveryStatus): boolean => LIVE[s];
