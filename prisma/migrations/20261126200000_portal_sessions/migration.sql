-- Webhook portal sessions (POST /v2/portal_sessions). A row is minted with a single-use link
-- (only the SHA-256 of the link's secret is kept) and becomes a session when the link is opened:
-- `session_hash` (SHA-256 of the cookie), `started_at`. `expires_at` is when the row stops
-- working: the link's expiry until it is opened, the session's after. A session also ends when
-- its page signs out (`ended_at`) or when the token that minted it is revoked (checked on every
-- request by joining api_tokens).
CREATE TABLE "portal_sessions" (
    "id" UUID NOT NULL,
    "org_id" TEXT NOT NULL,
    "token_id" UUID NOT NULL,
    "read_only" BOOLEAN NOT NULL,
    "link_hash" TEXT NOT NULL,
    "session_hash" TEXT,
    "started_at" TIMESTAMPTZ(3),
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "ended_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "portal_sessions_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "portal_sessions_link_hash_key" ON "portal_sessions"("link_hash");
CREATE UNIQUE INDEX "portal_sessions_session_hash_key" ON "portal_sessions"("session_hash");
-- the sweep of long-dead rows and the active-sessions gauge read by expiry
CREATE INDEX "portal_sessions_expires_at_idx" ON "portal_sessions"("expires_at");
