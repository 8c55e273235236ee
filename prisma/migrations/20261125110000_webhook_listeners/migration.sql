-- Webhook listeners (POST /v2/webhook_listeners): endpoints whose deliveries travel through a
-- stream a client holds open. `listener_connected_until` is NULL for an HTTPS endpoint; for a
-- listener it is how long the process holding its stream vouches for it (renewed while the stream
-- lives, set to the moment it closed otherwise). Connected means "in the future": only then does
-- the listener count toward the endpoint limit, and only then do the general claims leave its
-- deliveries to that process. Past it by the grace period, the listener is deleted.
ALTER TABLE "webhook_endpoints" ADD COLUMN "listener_connected_until" TIMESTAMPTZ(3);

-- The sweep of listeners whose grace period is over reads only live listeners.
CREATE INDEX "webhook_endpoints_listener_connected_until_idx" ON "webhook_endpoints"("listener_connected_until")
  WHERE "deleted_at" IS NULL AND "listener_connected_until" IS NOT NULL;
