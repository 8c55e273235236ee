-- Per-endpoint throttle (the contract's `rate_limit`: deliveries per second, 1..1000, checked by
-- the API; NULL sends as fast as the receiver answers). The limit holds across every worker
-- because its bookkeeping is here, not in a process: each claim locks the rate-limited endpoints
-- it may take rows of, takes no more rows than `throttle_next_at` allows on the database's clock,
-- and moves it on by 1/rate_limit per row taken (a generic cell rate algorithm;
-- docs/delivery.md#rate-limits).
-- Microsecond precision, so the steps are never rounded to a faster pace.
ALTER TABLE "webhook_endpoints" ADD COLUMN "rate_limit" INTEGER;
ALTER TABLE "webhook_endpoints" ADD COLUMN "throttle_next_at" TIMESTAMPTZ(6);
