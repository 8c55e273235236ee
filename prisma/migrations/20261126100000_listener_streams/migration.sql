-- The stream that holds a webhook listener, and the token that opened it. A process claims a
-- listener's deliveries only while the listener's `listener_stream_id` is one of the streams it
-- holds, so when a client reconnects after a connection that died silently (its process never
-- saw it close), the new stream takes the listener over at once, in whichever process it lands,
-- and the old one ends at its holder's next renewal. Only the token that holds a stream may take
-- it over. NULL for HTTPS endpoints and for listeners with no stream.
ALTER TABLE "webhook_endpoints" ADD COLUMN "listener_stream_id" UUID;
ALTER TABLE "webhook_endpoints" ADD COLUMN "listener_token_id" UUID;

-- An API process that runs no dispatcher of its own claims only its streams' listeners: found here.
CREATE INDEX "webhook_endpoints_listener_stream_id_idx" ON "webhook_endpoints"("listener_stream_id")
  WHERE "listener_stream_id" IS NOT NULL;
