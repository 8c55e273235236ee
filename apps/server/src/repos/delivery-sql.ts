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

/** `queued`: the endpoints with any queued row, one index probe each (for WITH RECURSIVE; its last row is NULL). */
export const QUEUED_ENDPOINTS = `queued(endpoint_id) AS (
  (SELECT endpoint_id FROM webhook_deliveries WHERE status IN ${LIVE_SQL} ORDER BY endpoint_id LIMIT 1)
  UNION ALL
  SELECT (SELECT d.endpoint_id FROM webhook_deliveries d
           WHERE d.status IN ${LIVE_SQL} AND d.endpoint_id > q.endpoint_id
           ORDER BY d.endpoint_id LIMIT 1)
    FROM queued q
   WHERE q.endpoint_id IS NOT NULL
)`;

const FAIL_QUEUED = `
UPDATE webhook_deliveries
   SET status = $2, last_error_code = $3, last_error_message = $4,
       locked_until = NULL, lease_owner = NULL, updated_at = $5
 WHERE endpoint_id = $1::uuid AND status IN ${LIVE_SQL} AND status = ANY($6::text[])`;

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
