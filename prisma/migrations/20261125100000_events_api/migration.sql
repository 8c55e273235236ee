-- The Events API (GET /v2/events): newest first per org, filtered by type or audit, as keyset
-- scans. A test event (POST /v2/webhook_endpoints/{id}/test) is stored like any other and says so.
ALTER TABLE "events" ADD COLUMN "is_test" BOOLEAN NOT NULL DEFAULT false;

CREATE INDEX "events_org_id_created_at_id_idx" ON "events"("org_id", "created_at" DESC, "id" DESC);
CREATE INDEX "events_org_id_type_created_at_id_idx" ON "events"("org_id", "type", "created_at" DESC, "id" DESC);
CREATE INDEX "events_org_id_audit_id_created_at_id_idx" ON "events"("org_id", "audit_id", "created_at" DESC, "id" DESC);

-- The API now reads `result` back as the contract's enum: the database holds nothing else.
ALTER TABLE "events"
  ADD CONSTRAINT "events_result_check" CHECK ("result" IN ('passed', 'failed'));
