-- Publishing stores an event and fans it out in one statement, with no transaction block around
-- it (repos/events.repo.ts, PUBLISH and PUBLISH_MANY): one round trip where BEGIN, a lock
-- statement, the insert and COMMIT took four.
--
-- Events are partitioned by day, and a unique index on a partitioned table must include the
-- partition key: no index can say "one row per id" across days, and a publisher's re-send arrives
-- on another day too. This function is what stands for that index. It takes a transaction lock
-- per event id (two int4 keys, class 0x65766e74 "evnt": a space apart from single-bigint advisory
-- locks; in a stable order, so two batches sharing ids cannot deadlock), then answers the ids no
-- partition holds. It is VOLATILE, so each look-up takes a snapshot of its own, after the locks
-- are held: a concurrent publisher of the same id has committed by then, and its row is seen,
-- though the calling statement's own snapshot is older. The locks last until the calling
-- statement's transaction ends.
--
-- One look-up per id, by equality: each is a probe of every day's primary key, whatever the
-- planner knows of the days. A set-based anti join was planned as a hash of a whole day's ids
-- while that day had no statistics yet (0.6–0.9 ms per event in the bench, growing with the day).
--
-- ROWS 1: what a publish of one event, the common case, answers at most; the planner of the
-- statement around it then joins the endpoints to one row, not to a thousand.
CREATE FUNCTION "ars_unknown_event_ids"("ids" uuid[]) RETURNS SETOF uuid LANGUAGE plpgsql VOLATILE ROWS 1 AS $$
DECLARE
  "x" uuid;
BEGIN
  IF cardinality("ids") = 1 THEN
    -- one event (POST /v2/internal/events): its lock and its probe, nothing to sort
    PERFORM pg_advisory_xact_lock(1702260340, hashtext("ids"[1]::text));
    IF NOT EXISTS (SELECT 1 FROM "events" e WHERE e."id" = "ids"[1]) THEN
      RETURN NEXT "ids"[1];
    END IF;
    RETURN;
  END IF;
  PERFORM pg_advisory_xact_lock(1702260340, l.h)
     FROM (SELECT DISTINCT hashtext(u::text) AS h FROM unnest("ids") AS u ORDER BY 1) l;
  FOR "x" IN SELECT DISTINCT u FROM unnest("ids") AS u LOOP
    IF NOT EXISTS (SELECT 1 FROM "events" e WHERE e."id" = "x") THEN
      RETURN NEXT "x";
    END IF;
  END LOOP;
END
$$;
