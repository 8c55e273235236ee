-- Ordered endpoints (the contract's `delivery_order`): an endpoint with 'ordered' has at most one
-- delivery in flight, and the claim takes only its head, the earliest queued delivery in event
-- order (occurred_at, then event id), when it is due; a retrying head holds every later one
-- (docs/delivery.md#ordered-endpoints).
ALTER TABLE "webhook_endpoints" ADD COLUMN "delivery_order" TEXT NOT NULL DEFAULT 'unordered';
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_delivery_order_check" CHECK ("delivery_order" IN ('unordered', 'ordered'));

-- The event's occurred_at on each delivery, written by the fan-out; queued rows get it now (final
-- rows never compete for a head, so they keep NULL).
ALTER TABLE "webhook_deliveries" ADD COLUMN "event_occurred_at" TIMESTAMPTZ(3);
UPDATE "webhook_deliveries" d SET "event_occurred_at" = e."occurred_at"
  FROM "events" e
 WHERE e."id" = d."event_id" AND e."created_at" = d."created_at" AND d."status" IN ('pending', 'retrying');

CREATE INDEX "webhook_deliveries_endpoint_id_event_occurred_at_event_id_idx" ON "webhook_deliveries"("endpoint_id", "event_occurred_at", "event_id")
  WHERE "status" IN ('pending', 'retrying');
