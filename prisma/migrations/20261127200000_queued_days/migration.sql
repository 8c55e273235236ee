-- The days of the oldest and newest queued delivery, each read in one short probe: the engine's
-- statements read only the day partitions between them (repos/delivery-sql.ts, LIVE_DAYS).
-- Without them, every probe of the per-endpoint due index visited the partial index of each kept
-- day partition (30 and more), though queued rows sit in the newest few (bench/RETENTION.md).
--
-- On an expression of created_at, not on the column itself: an index on created_at would offer
-- the planner a second way into the queue, by the very bounds the statements prune with, whose
-- selectivity it cannot know (they are computed as the statement runs), and it took that way
-- over the due index, reading every queued row of the days for each endpoint. Prisma's schema
-- cannot describe an expression index: this one lives in migrations only
-- (test/db/schema-match.test.ts lists it).
CREATE INDEX "webhook_deliveries_queued_day_idx" ON "webhook_deliveries" ((created_at AT TIME ZONE 'UTC'))
  WHERE "status" IN ('pending', 'retrying');
