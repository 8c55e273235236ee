// The delivery lifecycle's rules (domain/delivery/) as SQL, rendered once for every repository
// that reads or writes the queue: the live set, the walk of endpoints with queued rows, and
// failing an unusable endpoint's queue. The live set is a literal, not a parameter, because the
// partial indexes of the queue (`WHERE status IN ('pending', 'retrying')`, prisma/migrations) are
// only used by statements whose predicate the planner can prove implies theirs
// (test/db/enumerated-checks.test.ts holds the indexes to the same set).
import { failQueue, type UnavailableCause } from "../domain/delivery/unavailable.js";
import { LIVE_STATUSES } from "../domain/delivery/status.js";
import type { SqlExecutor } from "../db/client.js";

/** `('pending', 'retrying')`: the statuses the lifecycle calls live. */
export const LIVE_SQL = `(${LIVE_STATUSES.map((s) => `'${s}'`).join(", ")})`;

/**
 * The expression of webhook_deliveries_queued_day_idx (prisma/migrations/20261127200000_queued_days):
 * an index on the column itself would be a second way into the queue, by the floor's bound, that
 * the planner could prefer to the due index.
 */
const QUEUED_DAY = "(created_at AT TIME ZONE 'UTC')";

/**
 * `live_floor`: the created_at of the oldest queued row, one probe of its own partial index.
 * Queued rows sit in the newest few of the 30 and more kept day partitions, so every statement
 * that looks for them names a floor: the metrics scrape and failing an endpoint's queue this one
 * (FROM_LIVE_FLOOR), a value the statement computes before its first row, by which the executor
 * skips every day partition before it at each probe, where otherwise each probe of the queue's
 * per-endpoint indexes visited the partial index of every kept day. Read in the statement's own
 * snapshot, it is never stale: a delivery sent again by hand, however old, counts at once. NULL
 * when nothing is queued (then nothing matches, rightly). The claim, the engine's hot statement,
 * reads from the floor the claim before it answered, a parameter (repos/deliveries-queue.repo.ts,
 * CLAIM_DAYS).
 *
 * A floor and no ceiling: with a second bound on the same column the planner takes the pair for
 * a narrow range (it cannot know values computed as the statement runs), and chose other plans
 * for that, such as a bitmap scan of the whole queue to walk its endpoints. The week of day
 * partitions created ahead is empty: a probe of each costs next to nothing.
 */
export const LIVE_FLOOR = `live_floor(at) AS MATERIALIZED (
  SELECT min(${QUEUED_DAY}) AT TIME ZONE 'UTC' FROM webhook_deliveries WHERE status IN ${LIVE_SQL})`;

/** SQL of a floor: `alias`'s row is on or after it. */
export type Floor = (alias: string) => string;

/** `alias`'s row is on or after the live floor (the statement's WITH names LIVE_FLOOR). */
export const FROM_LIVE_FLOOR: Floor = (alias) => `${alias}.created_at >= (SELECT at FROM live_floor)`;

/** `queued`: the endpoints with any queued row on or after `floor`, one index probe each (for WITH RECURSIVE; its last row is NULL). */
export const queuedEndpoints = (floor: Floor) => `queued(endpoint_id) AS (
  (SELECT d.endpoint_id FROM webhook_deliveries d WHERE d.status IN ${LIVE_SQL} AND ${floor("d")} ORDER BY d.endpoint_id LIMIT 1)
  UNION ALL
  SELECT (SELECT d.endpoint_id FROM webhook_deliveries d
           WHERE d.status IN ${LIVE_SQL} AND ${floor("d")} AND d.endpoint_id > q.endpoint_id
           ORDER BY d.endpoint_id LIMIT 1)
    FROM queued q
   WHERE q.endpoint_id IS NOT NULL
)`;

/** queuedEndpoints from the live floor (after LIVE_FLOOR). */
export const QUEUED_ENDPOINTS = queuedEndpoints(FROM_LIVE_FLOOR);

const FAIL_QUEUED = `
WITH ${LIVE_FLOOR}
UPDATE webhook_deliveries d
   SET status = $2, last_error_code = $3, last_error_message = $4,
       locked_until = NULL, lease_owner = NULL, updated_at = $5
 WHERE d.endpoint_id = $1::uuid AND d.status IN ${LIVE_SQL} AND ${FROM_LIVE_FLOOR("d")} AND d.status = ANY($6::text[])`;

/** Anything that runs one parameterised statement: a pool, a transaction, an adapted Prisma transaction. */
export type StatementRunner = Pick<SqlExecutor, "query">;

/**
 * Fails every queued delivery of an endpoint that became unusable (domain/delivery/unavailable.ts),
 * so none waits for a dispatcher to notice. Call it in the transaction that disabled or deleted
 * the endpoint, after the endpoint row was written (lock order: endpoint, then deliveries).
 */
export async function failQueuedDeliveries(tx: StatementRunner, endpointId: string, cause: UnavailableCause, at: Date): Promise<void> {
  const f = failQueue(cause, at);
  await tx.query(FAIL_QUEUED, [endpointId, f.status, f.last_error_code, f.last_error_message, f.at, f.from]);
}
