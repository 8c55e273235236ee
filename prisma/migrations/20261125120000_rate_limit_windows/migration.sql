-- The per-token rate limit is counted here so that every API process on this database shares
-- one count: one row per token and one-minute window, bumped by one upsert per request. The
-- upsert that opens a token's new window deletes its older ones, so the table holds about one row
-- per token in use and needs no index beyond its key.
-- UNLOGGED: a count is worth less than the WAL flush a logged write makes every request wait
-- for. The table is emptied after a crash of the primary (counts restart: a minute's allowance
-- at most) and is not streamed to replicas (nothing reads it there).
CREATE UNLOGGED TABLE "rate_limit_windows" (
    "key" TEXT NOT NULL,
    "window_start" TIMESTAMPTZ(3) NOT NULL,
    "hits" INTEGER NOT NULL,

    CONSTRAINT "rate_limit_windows_pkey" PRIMARY KEY ("key", "window_start")
);
