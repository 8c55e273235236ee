// When the delivery engine makes an operational notification (the contract's EventType:
// webhook_endpoint.failing, .recovered, webhook_delivery.exhausted; .disabled is made wherever an
// endpoint is disabled). The repositories store what is decided here in the statement that
// records the change (repos/notification-sql.ts).
import type { AttemptTrigger } from "@audit-review/api-types/internal";
import type { DeliveryUpdate, EndpointEffect } from "./outcome.js";

const SCHEDULED: AttemptTrigger = "scheduled";

/**
 * The outstanding `failing` notification after a batch: the start of the streak it is about, or
 * null when none is. A streak that begins with none outstanding makes one (`failing`); the end of
 * any streak while one is outstanding makes `recovered` and clears it. It outlives a disable and a
 * re-enable (which clears the streak), so the first success after them still makes `recovered`.
 */
export function nextFailingNotice(stored: Date | null, failingSince: Date | null): Date | null {
  if (failingSince === null) return null;
  return stored ?? failingSince;
}

/**
 * Whether an outcome exhausts its delivery's retries: a scheduled attempt failed and the schedule
 * gave it no other, while its endpoint stays enabled (a disabled endpoint is its own
 * notification). A manual or test attempt's failure exhausts nothing: its schedule had ended.
 */
export function exhaustsRetries(update: DeliveryUpdate, effect: EndpointEffect | null, trigger: string | null, endpointDisabled: boolean): boolean {
  return update.status === "failed" && effect === "failing" && trigger === SCHEDULED && !endpointDisabled;
}
