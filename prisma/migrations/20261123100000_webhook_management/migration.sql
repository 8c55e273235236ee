-- Webhook management (DESIGN.md §7): attempt history, the trigger of a delivery's next attempt,
-- and Idempotency-Key records. The allowed values of the text columns are enforced by the
-- application (the schema-match test admits no CHECK constraints Prisma would not create).

-- What starts the next attempt of a delivery: the schedule, a manual retry/recovery, or a test.
ALTER TABLE "webhook_deliveries" ADD COLUMN "next_trigger" TEXT NOT NULL DEFAULT 'scheduled';

-- CreateTable
CREATE TABLE "webhook_delivery_attempts" (
    "id" UUID NOT NULL,
    "org_id" TEXT NOT NULL,
    "delivery_id" UUID NOT NULL,
    "endpoint_id" UUID NOT NULL,
    "attempt_number" INTEGER NOT NULL,
    "trigger" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "duration_ms" INTEGER NOT NULL,
    "response_status" INTEGER,
    "response_body" TEXT,
    "error_code" TEXT,
    "error_message" TEXT,

    CONSTRAINT "webhook_delivery_attempts_pkey" PRIMARY KEY ("id")
);

-- the attempts list: one delivery's attempts newest first, as a keyset scan
CREATE INDEX "webhook_delivery_attempts_delivery_id_started_at_id_idx" ON "webhook_delivery_attempts"("delivery_id", "started_at" DESC, "id" DESC);

ALTER TABLE "webhook_delivery_attempts" ADD CONSTRAINT "webhook_delivery_attempts_delivery_id_fkey" FOREIGN KEY ("delivery_id") REFERENCES "webhook_deliveries"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- CreateTable
CREATE TABLE "idempotency_keys" (
    "org_id" TEXT NOT NULL,
    "key_hash" TEXT NOT NULL,
    "request_hash" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "response_status" INTEGER,
    "response_headers" JSONB,
    "response_body_enc" BYTEA,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY ("org_id", "key_hash")
);

-- for sweeping expired keys
CREATE INDEX "idempotency_keys_expires_at_idx" ON "idempotency_keys"("expires_at");
