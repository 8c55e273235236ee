-- The dispatcher's claim visits each endpoint it has room for and takes that endpoint's earliest
-- due rows. With one (status, next_attempt_at) index, the due rows of an endpoint the claim skips
-- (resting after failures, or with all its slots taken) sat at the head of the index and every
-- claim walked past them. Per endpoint and only over queued rows, a skipped endpoint costs nothing.
DROP INDEX "webhook_deliveries_status_next_attempt_at_idx";

CREATE INDEX "webhook_deliveries_endpoint_id_next_attempt_at_idx" ON "webhook_deliveries"("endpoint_id", "next_attempt_at")
  WHERE "status" IN ('pending', 'retrying');
