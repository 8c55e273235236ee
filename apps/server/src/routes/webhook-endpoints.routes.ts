import { Router } from "express";
import type { CreateWebhookEndpointRequest, RecoverRequest, RotateSecretRequest, WebhookEndpointUpdate, operations } from "@audit-review/api-types/internal";
import { authOf, type Validated } from "../http/context.js";
import { pageRequest, sendList } from "../http/pagination.js";
import { presentRecovery } from "../presenters/event.presenter.js";
import { presentWebhookDelivery } from "../presenters/webhook-delivery.presenter.js";
import { presentCreatedWebhookEndpoint, presentWebhookEndpoint } from "../presenters/webhook-endpoint.presenter.js";
import type { EventsService } from "../services/events.service.js";
import type { WebhookDeliveriesService } from "../services/webhook-deliveries.service.js";
import type { WebhookEndpointsService } from "../services/webhook-endpoints.service.js";

type ListQuery = NonNullable<operations["listWebhookEndpoints"]["parameters"]["query"]>;

export interface WebhookEndpointsRouteDeps {
  webhookEndpoints: WebhookEndpointsService;
  webhookDeliveries: WebhookDeliveriesService;
  events: EventsService;
}

export function webhookEndpointsRoutes({ webhookEndpoints: svc, webhookDeliveries, events }: WebhookEndpointsRouteDeps): Router {
  const one = "/v2/webhook_endpoints/:endpoint_id";
  return Router({ caseSensitive: true })
    .get("/v2/webhook_endpoints", async function listWebhookEndpoints(req: Validated<unknown, ListQuery>, res) {
      const query = req.query;
      const page = await svc.listWebhookEndpoints(authOf(req), { status: query.status, kind: query.kind }, pageRequest(query));
      sendList(res, page, presentWebhookEndpoint);
    })
    .post("/v2/webhook_endpoints", async function createWebhookEndpoint(req: Validated<CreateWebhookEndpointRequest>, res) {
      const { endpoint, secret } = await svc.createWebhookEndpoint(authOf(req), req.body);
      res.status(201).location(`/v2/webhook_endpoints/${endpoint.id}`).json(presentCreatedWebhookEndpoint(endpoint, secret));
    })
    .get(one, async function getWebhookEndpoint(req, res) {
      res.json(presentWebhookEndpoint(await svc.getWebhookEndpoint(authOf(req), req.params.endpoint_id!)));
    })
    .patch(one, async function updateWebhookEndpoint(req: Validated<WebhookEndpointUpdate, unknown, { endpoint_id: string }>, res) {
      const endpoint = await svc.updateWebhookEndpoint(authOf(req), req.params.endpoint_id, req.body);
      res.json(presentWebhookEndpoint(endpoint));
    })
    .delete(one, async function deleteWebhookEndpoint(req, res) {
      await svc.deleteWebhookEndpoint(authOf(req), req.params.endpoint_id!);
      res.status(204).end();
    })
    .post(`${one}/rotate_secret`, async function rotateWebhookEndpointSecret(req: Validated<RotateSecretRequest | undefined, unknown, { endpoint_id: string }>, res) {
      const body = req.body;
      const { endpoint, secret } = await svc.rotateWebhookEndpointSecret(authOf(req), req.params.endpoint_id!, body);
      res.json(presentCreatedWebhookEndpoint(endpoint, secret));
    })
    .post(`${one}/test`, async function sendTestWebhookEvent(req, res) {
      const auth = authOf(req);
      const deliveryId = await events.sendTestWebhookEvent(auth, req.params.endpoint_id!);
      const delivery = await webhookDeliveries.getWebhookDelivery(auth, deliveryId);
      res.status(201).location(`/v2/webhook_deliveries/${delivery.id}`).json(presentWebhookDelivery(delivery));
    })
    .post(`${one}/recover`, async function recoverWebhookDeliveries(req: Validated<RecoverRequest, unknown, { endpoint_id: string }>, res) {
      const queued = await svc.recoverWebhookDeliveries(authOf(req), req.params.endpoint_id, req.body);
      res.status(202).json(presentRecovery(queued));
    });
}
