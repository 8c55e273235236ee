import { Router } from "express";
import type { operations } from "@audit-review/api-types/internal";
import { authOf, type Validated } from "../http/context.js";
import { pageRequest, sendList } from "../http/pagination.js";
import { presentWebhookDelivery, presentWebhookDeliveryAttempt } from "../presenters/webhook-delivery.presenter.js";
import type { DeliveryFilters, WebhookDeliveriesService } from "../services/webhook-deliveries.service.js";

type ListQuery = NonNullable<operations["listWebhookDeliveries"]["parameters"]["query"]>;
type AttemptsQuery = NonNullable<operations["listWebhookDeliveryAttempts"]["parameters"]["query"]>;

function filtersOf(query: ListQuery): DeliveryFilters {
  return { endpointId: query.endpoint_id, status: query.status, eventType: query.event_type, auditId: query.audit_id };
}

export function webhookDeliveriesRoutes(svc: WebhookDeliveriesService): Router {
  const one = "/v2/webhook_deliveries/:delivery_id";
  return Router({ caseSensitive: true })
    .get("/v2/webhook_deliveries", async function listWebhookDeliveries(req: Validated<unknown, ListQuery>, res) {
      const query = req.query;
      const page = await svc.listWebhookDeliveries(authOf(req), filtersOf(query), pageRequest(query));
      sendList(res, page, presentWebhookDelivery);
    })
    .get(one, async function getWebhookDelivery(req, res) {
      res.json(presentWebhookDelivery(await svc.getWebhookDelivery(authOf(req), req.params.delivery_id!)));
    })
    .get(`${one}/attempts`, async function listWebhookDeliveryAttempts(req: Validated<unknown, AttemptsQuery, { delivery_id: string }>, res) {
      const page = await svc.listWebhookDeliveryAttempts(authOf(req), req.params.delivery_id!, pageRequest(req.query));
      sendList(res, page, presentWebhookDeliveryAttempt);
    })
    .post(`${one}/retry`, async function retryWebhookDelivery(req, res) {
      res.status(202).json(presentWebhookDelivery(await svc.retryWebhookDelivery(authOf(req), req.params.delivery_id!)));
    });
}
