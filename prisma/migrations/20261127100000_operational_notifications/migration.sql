-- Operational notifications (the contract's EndpointKind and EventType): the delivery engine makes
-- events about an org's `audit` endpoints (webhook_endpoint.failing, .disabled, .recovered,
-- webhook_delivery.exhausted) and fans them out to the org's `operational` endpoints, in the
-- statement or transaction that records the change (docs/delivery.md#operational-notifications).

-- What an endpoint receives, fixed at creation; an audit endpoint subscribes only to audit.completed,
-- an operational endpoint only to the four notifications.
ALTER TABLE "webhook_endpoints" ADD COLUMN "kind" TEXT NOT NULL DEFAULT 'audit';
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_kind_check" CHECK ("kind" IN ('audit', 'operational'));
ALTER TABLE "webhook_endpoints" DROP CONSTRAINT "webhook_endpoints_event_types_check";
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_event_types_check"
  CHECK ("event_types" <@ ARRAY['audit.completed', 'webhook_endpoint.failing', 'webhook_endpoint.disabled', 'webhook_endpoint.recovered', 'webhook_delivery.exhausted']::text[]);
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_kind_event_types_check"
  CHECK (CASE "kind" WHEN 'audit' THEN "event_types" <@ ARRAY['audit.completed']::text[]
                     ELSE NOT ('audit.completed' = ANY ("event_types")) END);
-- The start of the failure streak a `failing` notification was made about; NULL when none is
-- outstanding (none made, or `recovered` made since). It outlives a disable and a re-enable, so
-- the endpoint's first success afterwards makes the one `recovered`.
ALTER TABLE "webhook_endpoints" ADD COLUMN "failing_notice_at" TIMESTAMPTZ(3);
-- the fan-out's probe for an org's operational endpoints
CREATE INDEX "webhook_endpoints_org_id_idx" ON "webhook_endpoints"("org_id") WHERE "kind" = 'operational' AND "deleted_at" IS NULL;

-- An operational event is about an endpoint, not an audit: the audit columns are NULL and `data`
-- holds what it says (the contract's OperationalEventData, as stored).
ALTER TABLE "events" ALTER COLUMN "audit_id" DROP NOT NULL;
ALTER TABLE "events" ALTER COLUMN "question_set_id" DROP NOT NULL;
ALTER TABLE "events" ALTER COLUMN "result" DROP NOT NULL;
ALTER TABLE "events" ALTER COLUMN "responses" DROP NOT NULL;
ALTER TABLE "events" ADD COLUMN "data" JSONB;
ALTER TABLE "events" DROP CONSTRAINT "events_type_check";
ALTER TABLE "events" ADD CONSTRAINT "events_type_check"
  CHECK ("type" IN ('audit.completed', 'webhook_endpoint.failing', 'webhook_endpoint.disabled', 'webhook_endpoint.recovered', 'webhook_delivery.exhausted'));
ALTER TABLE "events" ADD CONSTRAINT "events_shape_check"
  CHECK (CASE "type" WHEN 'audit.completed'
           THEN "audit_id" IS NOT NULL AND "question_set_id" IS NOT NULL AND "result" IS NOT NULL AND "responses" IS NOT NULL AND "data" IS NULL
           ELSE "audit_id" IS NULL AND "data" IS NOT NULL END);

ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_event_type_check";
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_event_type_check"
  CHECK ("event_type" IN ('audit.completed', 'webhook_endpoint.failing', 'webhook_endpoint.disabled', 'webhook_endpoint.recovered', 'webhook_delivery.exhausted'));
