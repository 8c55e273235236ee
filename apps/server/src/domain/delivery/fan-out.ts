// A delivery as fan-out creates it: one per matching endpoint, in the statement that stores its
// event (docs/delivery.md#states: "(new) → pending, next_attempt_at = now").
import type { AttemptTrigger } from "@audit-review/api-types/internal";
import { triggerAfterAttempt } from "./outcome.js";
import type { DeliveryStatus } from "./status.js";

export interface NewDelivery {
  status: Extract<DeliveryStatus, "pending">;
  attempt_count: 0;
  /** its first attempt is due at once */
  next_attempt_at: Date;
  next_trigger: AttemptTrigger;
}

export const newDelivery = (isTest: boolean, at: Date): NewDelivery => ({
  status: "pending",
  attempt_count: 0,
  next_attempt_at: at,
  // a test event's attempts are all tests; an event's first attempt is the schedule's first
  next_trigger: triggerAfterAttempt(isTest),
});
