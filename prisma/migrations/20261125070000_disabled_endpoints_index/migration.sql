-- The metrics endpoint counts disabled endpoints by reason at every scrape. Over this partial index
-- the count reads only the disabled live endpoints, however many enabled or deleted ones there are.
CREATE INDEX "webhook_endpoints_disabled_reason_idx" ON "webhook_endpoints"("disabled_reason")
  WHERE "status" = 'disabled' AND "deleted_at" IS NULL;
