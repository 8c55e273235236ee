import type { AuthContext } from "../auth/context.js";
import { manualRetry } from "../domain/delivery/requeue.js";
import { DeliveryExpiringError, DeliveryInProgressError, EndpointDisabledError, NotFoundError } from "../lib/errors.js";
import type { PageRequest } from "../lib/page.js";
import type { Retention } from "../domain/retention.js";
import type { DeliveryFilters, WebhookDeliveriesRepo } from "../repos/webhook-deliveries.repo.js";
import type { WebhookDeliveryAttemptsRepo } from "../repos/webhook-delivery-attempts.repo.js";

export type { DeliveryFilters } from "../repos/webhook-deliveries.repo.js";

export interface WebhookDeliveriesDeps {
  deliveries: WebhookDeliveriesRepo;
  attempts: WebhookDeliveryAttemptsRepo;
  /** wakes the dispatchers when a delivery was queued */
  onQueued: () => void;
  /** what a retry may still revive */
  retention: Retention;
  /** the engine's clock, which retention runs on */
  now: () => Date;
}

export function webhookDeliveriesService({ deliveries, attempts, onQueued, retention, now }: WebhookDeliveriesDeps) {
  const notFound = () => new NotFoundError("No webhook delivery with this id exists in your org.");

  async function getWebhookDelivery(auth: AuthContext, id: string) {
    const row = await deliveries.findById(auth.orgId, id);
    if (!row) throw notFound();
    return row;
  }

  return {
    listWebhookDeliveries(auth: AuthContext, filters: DeliveryFilters, page: PageRequest) {
      return deliveries.list(auth.orgId, filters, page);
    },

    getWebhookDelivery,

    async listWebhookDeliveryAttempts(auth: AuthContext, id: string, page: PageRequest) {
      const delivery = await getWebhookDelivery(auth, id);
      return attempts.list(auth.orgId, delivery, page);
    },

    async retryWebhookDelivery(auth: AuthContext, id: string) {
      const at = now();
      const result = await deliveries.requeue(auth.orgId, id, retention.earliestRevivable(at), manualRetry(at));
      switch (result.kind) {
        case "not_found":
          throw notFound();
        case "expiring":
          throw new DeliveryExpiringError(
            `The delivery is due for removal by retention (${retention.days} days) within 24 hours and cannot be queued again.`,
          );
        case "endpoint_disabled":
          throw new EndpointDisabledError();
        case "in_progress":
          throw new DeliveryInProgressError();
        case "queued":
          onQueued();
          return result.delivery;
      }
    },
  };
}

export type WebhookDeliveriesService = ReturnType<typeof webhookDeliveriesService>;
