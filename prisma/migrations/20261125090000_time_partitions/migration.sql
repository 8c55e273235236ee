-- Time-range partitions for the three tables every published audit writes: events and deliveries
-- by created_at, attempts by started_at. Retention (README, "Retention and housekeeping") then
-- removes a whole day by dropping its partition, whatever the size of the table.
--
-- The existing tables are not copied: each is renamed to <table>_history and attached, as it is,
-- as the DEFAULT partition of the new partitioned table. Attaching a default partition to a table
-- that has no other partition checks no row, so the only work proportional to the data is the
-- primary keys and the unique index, which must now include the partition key. They are built by
-- CREATE ... IF NOT EXISTS under the names below: on a large database build them first with
-- CREATE UNIQUE INDEX CONCURRENTLY under the same names (README) and this migration only reuses
-- them. The housekeeping loop then bounds the history partition (an online CHECK validation)
-- and creates the daily partitions; it drops the history once all of it is past the window.
--
-- Foreign keys among these three tables are dropped: a partition of a referenced table cannot be
-- dropped while the key exists, and checking it on detach reads the referencing table. They are
-- written together (one statement publishes an event with its deliveries; an attempt is written
-- with its delivery's outcome) and removed together by day. The deliveries' key to
-- webhook_endpoints goes too: every partition created or dropped would add or remove its
-- triggers on webhook_endpoints, a lock on that table taken while holding one on the
-- deliveries, the reverse of the order in which disabling an endpoint takes them (a deadlock).
-- Endpoints are never deleted (deletion is a mark), and deliveries are created only for
-- endpoints the publishing statement reads.
-- What the key from deliveries to events guaranteed is kept by a trigger that reads only the
-- event's own day: a delivery names an existing event and carries its created_at, which is what
-- makes the unique (event_id, endpoint_id, created_at) one delivery per event and endpoint.

-- 1. The keys the partitioned tables need, on the tables as they are (reused when pre-built).
CREATE UNIQUE INDEX IF NOT EXISTS "events_history_id_created_at_key" ON "events"("id", "created_at");
CREATE UNIQUE INDEX IF NOT EXISTS "webhook_deliveries_history_id_created_at_key" ON "webhook_deliveries"("id", "created_at");
CREATE UNIQUE INDEX IF NOT EXISTS "webhook_deliveries_history_event_id_endpoint_id_created_at_key" ON "webhook_deliveries"("event_id", "endpoint_id", "created_at");
CREATE UNIQUE INDEX IF NOT EXISTS "webhook_delivery_attempts_history_id_started_at_key" ON "webhook_delivery_attempts"("id", "started_at");

ALTER TABLE "webhook_delivery_attempts" DROP CONSTRAINT "webhook_delivery_attempts_delivery_id_fkey";
ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_event_id_fkey";
ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_endpoint_id_fkey";

ALTER TABLE "events" DROP CONSTRAINT "events_pkey";
ALTER TABLE "events" ADD CONSTRAINT "events_history_pkey" PRIMARY KEY USING INDEX "events_history_id_created_at_key";
ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_pkey";
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_history_pkey" PRIMARY KEY USING INDEX "webhook_deliveries_history_id_created_at_key";
DROP INDEX "webhook_deliveries_event_id_endpoint_id_key";
ALTER TABLE "webhook_delivery_attempts" DROP CONSTRAINT "webhook_delivery_attempts_pkey";
ALTER TABLE "webhook_delivery_attempts" ADD CONSTRAINT "webhook_delivery_attempts_history_pkey" PRIMARY KEY USING INDEX "webhook_delivery_attempts_history_id_started_at_key";

-- 2. The old tables become the history; their remaining indexes make way for the parents' names.
ALTER TABLE "events" RENAME TO "events_history";
ALTER INDEX "events_org_id_created_at_idx" RENAME TO "events_history_org_id_created_at_idx";

ALTER TABLE "webhook_deliveries" RENAME TO "webhook_deliveries_history";
ALTER INDEX "webhook_deliveries_org_id_created_at_id_idx" RENAME TO "webhook_deliveries_history_org_id_created_at_id_idx";
ALTER INDEX "webhook_deliveries_org_id_endpoint_id_created_at_id_idx" RENAME TO "webhook_deliveries_history_org_id_endpoint_id_created_at_id_idx";
ALTER INDEX "webhook_deliveries_org_id_status_created_at_id_idx" RENAME TO "webhook_deliveries_history_org_id_status_created_at_id_idx";
ALTER INDEX "webhook_deliveries_org_id_event_type_created_at_id_idx" RENAME TO "webhook_deliveries_history_org_id_event_type_created_at_id_idx";
ALTER INDEX "webhook_deliveries_org_id_audit_id_created_at_id_idx" RENAME TO "webhook_deliveries_history_org_id_audit_id_created_at_id_idx";
ALTER INDEX "webhook_deliveries_endpoint_id_next_attempt_at_idx" RENAME TO "webhook_deliveries_history_endpoint_id_next_attempt_at_idx";

ALTER TABLE "webhook_delivery_attempts" RENAME TO "webhook_delivery_attempts_history";
ALTER INDEX "webhook_delivery_attempts_delivery_id_started_at_id_idx" RENAME TO "webhook_delivery_attempts_history_delivery_id_started_at_id_idx";

-- 3. The partitioned tables, column for column as before (same names, types, order, checks).
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

    CONSTRAINT "events_pkey" PRIMARY KEY ("id", "created_at"),
    CONSTRAINT "events_type_check" CHECK ("type" IN ('audit.completed'))
) PARTITION BY RANGE ("created_at");

CREATE INDEX "events_org_id_created_at_idx" ON "events"("org_id", "created_at");

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
    "next_trigger" TEXT NOT NULL DEFAULT 'scheduled',

    CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("id", "created_at"),
    CONSTRAINT "webhook_deliveries_event_type_check" CHECK ("event_type" IN ('audit.completed')),
    CONSTRAINT "webhook_deliveries_status_check" CHECK ("status" IN ('pending', 'retrying', 'succeeded', 'failed')),
    CONSTRAINT "webhook_deliveries_last_error_code_check" CHECK ("last_error_code" IN ('connection_error', 'timeout', 'tls_error', 'dns_error', 'destination_blocked', 'unexpected_status', 'auth_error', 'endpoint_disabled', 'endpoint_deleted')),
    CONSTRAINT "webhook_deliveries_next_trigger_check" CHECK ("next_trigger" IN ('scheduled', 'manual', 'test'))
) PARTITION BY RANGE ("created_at");

-- one delivery per event per endpoint: an event's deliveries carry its created_at (they are
-- created in the statement that stores it), so the partition key adds nothing to the rule
CREATE UNIQUE INDEX "webhook_deliveries_event_id_endpoint_id_created_at_key" ON "webhook_deliveries"("event_id", "endpoint_id", "created_at");
CREATE INDEX "webhook_deliveries_org_id_created_at_id_idx" ON "webhook_deliveries"("org_id", "created_at" DESC, "id" DESC);
CREATE INDEX "webhook_deliveries_org_id_endpoint_id_created_at_id_idx" ON "webhook_deliveries"("org_id", "endpoint_id", "created_at" DESC, "id" DESC);
CREATE INDEX "webhook_deliveries_org_id_status_created_at_id_idx" ON "webhook_deliveries"("org_id", "status", "created_at" DESC, "id" DESC);
CREATE INDEX "webhook_deliveries_org_id_event_type_created_at_id_idx" ON "webhook_deliveries"("org_id", "event_type", "created_at" DESC, "id" DESC);
CREATE INDEX "webhook_deliveries_org_id_audit_id_created_at_id_idx" ON "webhook_deliveries"("org_id", "audit_id", "created_at" DESC, "id" DESC);
CREATE INDEX "webhook_deliveries_endpoint_id_next_attempt_at_idx" ON "webhook_deliveries"("endpoint_id", "next_attempt_at")
  WHERE "status" IN ('pending', 'retrying');

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

    CONSTRAINT "webhook_delivery_attempts_pkey" PRIMARY KEY ("id", "started_at"),
    CONSTRAINT "webhook_delivery_attempts_trigger_check" CHECK ("trigger" IN ('scheduled', 'manual', 'test')),
    CONSTRAINT "webhook_delivery_attempts_error_code_check" CHECK ("error_code" IN ('connection_error', 'timeout', 'tls_error', 'dns_error', 'destination_blocked', 'unexpected_status', 'auth_error', 'endpoint_disabled', 'endpoint_deleted'))
) PARTITION BY RANGE ("started_at");

CREATE INDEX "webhook_delivery_attempts_delivery_id_started_at_id_idx" ON "webhook_delivery_attempts"("delivery_id", "started_at" DESC, "id" DESC);

-- 4. The history tables join as default partitions: their indexes match the parents' and are
-- attached, not rebuilt; with no other partition yet, no row is checked.
ALTER TABLE "events" ATTACH PARTITION "events_history" DEFAULT;
ALTER TABLE "webhook_deliveries" ATTACH PARTITION "webhook_deliveries_history" DEFAULT;
ALTER TABLE "webhook_delivery_attempts" ATTACH PARTITION "webhook_delivery_attempts_history" DEFAULT;

-- 5. A delivery carries its event's created_at (and so lives in its event's day partition).
-- Checked after the statement's rows are written, as a foreign key is, so the statement that
-- stores an event with its deliveries passes.
CREATE FUNCTION "webhook_deliveries_event_check"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM "events" WHERE "id" = NEW."event_id" AND "created_at" = NEW."created_at") THEN
    RAISE EXCEPTION 'webhook delivery % names no event % created at %', NEW."id", NEW."event_id", NEW."created_at"
      USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'webhook_deliveries_event_check';
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER "webhook_deliveries_event_check" AFTER INSERT OR UPDATE OF "event_id", "created_at" ON "webhook_deliveries"
  FOR EACH ROW EXECUTE FUNCTION "webhook_deliveries_event_check"();
