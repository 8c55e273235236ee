import { Router } from "express";
import type { CreateWebhookEndpointRequest, RecoverRequest, RotateSecretRequest, WebhookEndpointUpdate, operations } from "@audit-review/api-types/internal";
import { authOf } from "../http/context.js";
import { listEnvelope } from "../http/pagination.js";
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
    .get("/v2/webhook_endpoints", async function listWebhookEndpoints(req, res) {
      const page = await svc.listWebhookEndpoints(authOf(req), req.query as ListQuery);
      res.json(listEnvelope(page.rows.map(presentWebhookEndpoint), page.hasMore, page.total));
    })
    .post("/v2/webhook_endpoints", async function createWebhookEndpoint(req, res) {
      const { endpoint, secret } = await svc.createWebhookEndpoint(authOf(req), req.body as CreateWebhookEndpointRequest);
      res.status(201).location(`/v2/webhook_endpoints/${endpoint.id}`).json(presentCreatedWebhookEndpoint(endpoint, secret));
    })
    .get(one, async function getWebhookEndpoint(req, res) {
      res.json(presentWebhookEndpoint(await svc.getWebhookEndpoint(authOf(req), req.params.endpoint_id!)));
    })
    .patch(one, async function updateWebhookEndpoint(req, res) {
      const endpoint = await svc.updateWebhookEndpoint(authOf(req), req.params.endpoint_id!, req.body as WebhookEndpointUpdate);
      res.json(presentWebhookEndpoint(endpoint));
    })
    .delete(one, async function deleteWebhookEndpoint(req, res) {
      await svc.deleteWebhookEndpoint(authOf(req), req.params.endpoint_id!);
      res.status(204).end();
    })
    .post(`${one}/rotate_secret`, async function rotateWebhookEndpointSecret(req, res) {
      const body = req.body as RotateSecretRequest | undefined;
      const { endpoint, secret } = await svc.rotateWebhookEndpointSecret(authOf(req), req.params.endpoint_id!, body);
      res.json(presentCreatedWebhookEndpoint(endpoint, secret));
    })
    .post(`${one}/test`, async function sendTestWebhookEvent(req, res) {
      const auth = authOf(req);
      const deliveryId = await events.sendTestWebhookEvent(auth, req.params.endpoint_id!);
      const delivery = await webhookDeliveries.getWebhookDelivery(auth, deliveryId);
      res.status(201).location(`/v2/webhook_deliveries/${delivery.id}`).json(presentWebhookDelivery(delivery));
    })
    .post(`${one}/recover`, async function recoverWebhookDeliveries(req, res) {
      const queued = await svc.recoverWebhookDeliveries(authOf(req), req.params.endpoint_id!, req.body as RecoverRequest);
      res.status(202).json({ object: "recovery", queued });
    });
}
