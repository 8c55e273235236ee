import type { operations } from "@audit-review/api-types/internal";
import type { AuthContext } from "../http/context.js";
import { pageRequest } from "../http/pagination.js";
import type { WebhookDeliveriesRepo } from "../repos/webhook-deliveries.repo.js";

type ListQuery = NonNullable<operations["listWebhookDeliveries"]["parameters"]["query"]>;

export function webhookDeliveriesService(repo: WebhookDeliveriesRepo) {
  return {
    listWebhookDeliveries(auth: AuthContext, query: ListQuery) {
      return repo.list(
        auth.orgId,
        { endpointId: query.endpoint_id, status: query.status, eventType: query.event_type, auditId: query.audit_id },
        pageRequest(query),
      );
    },
    getDelivery(auth: AuthContext, id: string) {
      return repo.findById(auth.orgId, id);
    },
  };
}

export type WebhookDeliveriesService = ReturnType<typeof webhookDeliveriesService>;
