-- CreateTable
CREATE TABLE "orgs" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "orgs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_tokens" (
    "id" UUID NOT NULL,
    "org_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "scopes" TEXT[],
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_tokens_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "question_sets" (
    "id" UUID NOT NULL,
    "org_id" TEXT NOT NULL,
    "set_name" TEXT NOT NULL,
    "set_code" TEXT NOT NULL,
    "type" TEXT,
    "is_production" BOOLEAN NOT NULL,
    "is_deleted" BOOLEAN NOT NULL DEFAULT false,
    "allow_doc_upload" BOOLEAN NOT NULL,
    "thresholds" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "question_sets_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "questions" (
    "id" UUID NOT NULL,
    "org_id" TEXT NOT NULL,
    "question_set_id" UUID NOT NULL,
    "position" INTEGER NOT NULL,
    "query" TEXT NOT NULL,
    "question_type" TEXT,
    "severity" TEXT,
    "remediation" TEXT,
    "is_deleted" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "questions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "coding_evaluations" (
    "id" UUID NOT NULL,
    "org_id" TEXT NOT NULL,
    "audit_id" UUID,
    "status" TEXT NOT NULL,
    "processed" BOOLEAN NOT NULL,
    "needs_em_eval" BOOLEAN NOT NULL,
    "em_eval_created" BOOLEAN NOT NULL,
    "needs_icd_eval" BOOLEAN NOT NULL,
    "icd_eval_created" BOOLEAN NOT NULL,
    "marked_reviewed" BOOLEAN NOT NULL,
    "reviewed_by" TEXT,
    "archived" BOOLEAN NOT NULL,
    "redacted" BOOLEAN NOT NULL,
    "cold" BOOLEAN NOT NULL,
    "display_date" DATE,
    "em_evaluation" JSONB,
    "icd_evaluation" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "coding_evaluations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_endpoints" (
    "id" UUID NOT NULL,
    "org_id" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "description" TEXT,
    "status" TEXT NOT NULL,
    "disabled_reason" TEXT,
    "disabled_at" TIMESTAMPTZ(3),
    "event_types" TEXT[],
    "filter_question_set_ids" UUID[],
    "filter_audit_results" TEXT NOT NULL,
    "payload_format" TEXT NOT NULL,
    "payload_fields" TEXT[],
    "payload_result_format" TEXT NOT NULL,
    "payload_responses_filter" TEXT NOT NULL,
    "payload_include_informational" BOOLEAN NOT NULL,
    "auth_type" TEXT NOT NULL,
    "auth_config" JSONB NOT NULL,
    "auth_secret_enc" BYTEA,
    "secret_enc" BYTEA NOT NULL,
    "secret_hint" TEXT NOT NULL,
    "previous_secret_enc" BYTEA,
    "previous_secret_expires_at" TIMESTAMPTZ(3),
    "legacy_signature" BOOLEAN NOT NULL,
    "failing_since" TIMESTAMPTZ(3),
    "deleted_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhook_endpoints_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "events" (
    "id" UUID NOT NULL,
    "org_id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "audit_id" UUID NOT NULL,
    "question_set_id" UUID NOT NULL,
    "document_id" TEXT,
    "result" TEXT NOT NULL,
    "raw_result" TEXT,
    "responses" JSONB NOT NULL,
    "occurred_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "events_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_deliveries" (
    "id" UUID NOT NULL,
    "org_id" TEXT NOT NULL,
    "endpoint_id" UUID NOT NULL,
    "event_id" UUID NOT NULL,
    "event_type" TEXT NOT NULL,
    "audit_id" UUID,
    "is_test" BOOLEAN NOT NULL,
    "status" TEXT NOT NULL,
    "attempt_count" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL,
    "last_response_status" INTEGER,
    "last_error_code" TEXT,
    "last_error_message" TEXT,
    "delivered_at" TIMESTAMPTZ(3),
    "locked_until" TIMESTAMPTZ(3),
    "lease_owner" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "api_tokens_token_hash_key" ON "api_tokens"("token_hash");

-- CreateIndex
CREATE INDEX "api_tokens_org_id_idx" ON "api_tokens"("org_id");

-- CreateIndex
CREATE INDEX "question_sets_org_id_is_deleted_created_at_id_idx" ON "question_sets"("org_id", "is_deleted", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "question_sets_org_id_is_deleted_type_created_at_id_idx" ON "question_sets"("org_id", "is_deleted", "type", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "question_sets_org_id_is_deleted_is_production_created_at_id_idx" ON "question_sets"("org_id", "is_deleted", "is_production", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "questions_question_set_id_position_idx" ON "questions"("question_set_id", "position");

-- CreateIndex
CREATE INDEX "coding_evaluations_org_id_created_at_id_idx" ON "coding_evaluations"("org_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "coding_evaluations_org_id_status_created_at_id_idx" ON "coding_evaluations"("org_id", "status", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "coding_evaluations_org_id_audit_id_created_at_id_idx" ON "coding_evaluations"("org_id", "audit_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "coding_evaluations_org_id_archived_created_at_id_idx" ON "coding_evaluations"("org_id", "archived", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "webhook_endpoints_org_id_created_at_id_idx" ON "webhook_endpoints"("org_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "webhook_endpoints_org_id_status_created_at_id_idx" ON "webhook_endpoints"("org_id", "status", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "events_org_id_created_at_idx" ON "events"("org_id", "created_at");

-- CreateIndex
CREATE INDEX "webhook_deliveries_org_id_created_at_id_idx" ON "webhook_deliveries"("org_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "webhook_deliveries_org_id_endpoint_id_created_at_id_idx" ON "webhook_deliveries"("org_id", "endpoint_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "webhook_deliveries_org_id_status_created_at_id_idx" ON "webhook_deliveries"("org_id", "status", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "webhook_deliveries_org_id_event_type_created_at_id_idx" ON "webhook_deliveries"("org_id", "event_type", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "webhook_deliveries_org_id_audit_id_created_at_id_idx" ON "webhook_deliveries"("org_id", "audit_id", "created_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "webhook_deliveries_status_next_attempt_at_idx" ON "webhook_deliveries"("status", "next_attempt_at");

-- CreateIndex
CREATE UNIQUE INDEX "webhook_deliveries_event_id_endpoint_id_key" ON "webhook_deliveries"("event_id", "endpoint_id");

-- AddForeignKey
ALTER TABLE "api_tokens" ADD CONSTRAINT "api_tokens_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "orgs"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "questions" ADD CONSTRAINT "questions_question_set_id_fkey" FOREIGN KEY ("question_set_id") REFERENCES "question_sets"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_endpoint_id_fkey" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_event_id_fkey" FOREIGN KEY ("event_id") REFERENCES "events"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
