-- An event id is stored once across every day partition of events, and no index of a partitioned
-- table can say so (a unique index must include the partition key). ars_unknown_event_ids
-- (migration 20261128000000_publish_in_one_statement) looked for each id in every partition: one
-- probe of each day's primary key per published event, so publishing cost more with every day the
-- retention window keeps (46 partitions against 9: +0.2–0.3 ms per event, bench/NOTES.md, "An
-- event id's look-up across the days").
--
-- The ingestion operations also asked every partition which org an id is of (a batch, before it
-- stores anything: another org's id is refused): one probe per id and day again.
--
-- `event_ids` is the index across days that the partitioned table cannot have: one row per stored
-- event id, with its event's org and created_at. A trigger on events writes it, so every statement
-- that stores an event (publishing, a batch, a notification, a fixture) keeps it whole; the row is
-- forgotten in the transaction that drops its event's partition (repos/partitions.repo.ts), as
-- the event is. A look-up is one probe of its primary key, whatever the days.
CREATE TABLE "event_ids" (
    "id" UUID NOT NULL,
    "org_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "event_ids_pkey" PRIMARY KEY ("id")
);

-- what retention forgets: the ids of a dropped day
CREATE INDEX "event_ids_created_at_idx" ON "event_ids"("created_at");

INSERT INTO "event_ids" ("id", "org_id", "created_at")
SELECT DISTINCT ON ("id") "id", "org_id", "created_at" FROM "events" ORDER BY "id", "created_at";

-- ON CONFLICT: an id is stored once (ars_unknown_event_ids below), so this never conflicts in a
-- publish; it keeps a second copy written around the function (by hand, say) from failing.
CREATE FUNCTION "ars_remember_event_id"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "event_ids" ("id", "org_id", "created_at") VALUES (NEW."id", NEW."org_id", NEW."created_at") ON CONFLICT ("id") DO NOTHING;
  RETURN NULL;
END
$$;

-- on the partitioned table: every partition has it, those housekeeping creates later too
CREATE TRIGGER "events_remember_id" AFTER INSERT ON "events" FOR EACH ROW EXECUTE FUNCTION "ars_remember_event_id"();

-- As before (its migration says why: the lock per id, the snapshot of each look-up taken after
-- it, ROWS 1), now looking in event_ids.
CREATE OR REPLACE FUNCTION "ars_unknown_event_ids"("ids" uuid[]) RETURNS SETOF uuid LANGUAGE plpgsql VOLATILE ROWS 1 AS $$
DECLARE
  "x" uuid;
BEGIN
  IF cardinality("ids") = 1 THEN
    PERFORM pg_advisory_xact_lock(1702260340, hashtext("ids"[1]::text));
    IF NOT EXISTS (SELECT 1 FROM "event_ids" k WHERE k."id" = "ids"[1]) THEN
      RETURN NEXT "ids"[1];
    END IF;
    RETURN;
  END IF;
  PERFORM pg_advisory_xact_lock(1702260340, l.h)
     FROM (SELECT DISTINCT hashtext(u::text) AS h FROM unnest("ids") AS u ORDER BY 1) l;
  FOR "x" IN SELECT DISTINCT u FROM unnest("ids") AS u LOOP
    IF NOT EXISTS (SELECT 1 FROM "event_ids" k WHERE k."id" = "x") THEN
      RETURN NEXT "x";
    END IF;
  END LOOP;
END
$$;
