// Whether a claim may have left due rows in the queue that this dispatcher could take once a slot
// frees. Only then does a finished attempt start a claim of its own: new rows bring a wake-up
// (queue-signal.ts), retries their timers, so a claim after every attempt of a quiet queue found
// nothing: at 80 events a second, 7,617 claims for 8,000 deliveries, most of them empty, each
// holding back the next wake-up's claim (bench/NOTES.md, "Claims that find nothing").
import type { Claim } from "../repos/deliveries-queue.repo.js";

export interface ClaimCoverage {
  /** the rows the claim could take */
  limit: number;
  /** the rows one claim takes of an endpoint not in `room` */
  perEndpoint: number;
  /** the room the claim had for each endpoint this dispatcher holds rows of (0: not claimed) */
  room: ReadonlyMap<string, number>;
  /** endpoints skipped for a reason a freed slot ends (rate-limited rows waiting here) */
  skippedUntilSent: boolean;
}

/**
 * True when the claim may have stopped short of the due rows: it took all it could, or as many
 * of an endpoint as it had room for, or skipped an endpoint for its held rows; or it took rows of
 * endpoints whose next rows only a later claim can take (ordered: one head at a time; rate-limited:
 * as the throttle allows). False only when it took every due row it was allowed to see.
 */
export function mayLeaveRows(claim: Pick<Claim, "rows" | "endpoints" | "throttle">, c: ClaimCoverage): boolean {
  if (claim.rows.length >= c.limit || c.skippedUntilSent || claim.throttle.heldBack > 0) return true;
  for (const n of c.room.values()) if (n === 0) return true;
  const taken = new Map<string, number>();
  for (const r of claim.rows) taken.set(r.endpoint_id, (taken.get(r.endpoint_id) ?? 0) + 1);
  for (const [endpointId, n] of taken) {
    if (n >= (c.room.get(endpointId) ?? c.perEndpoint)) return true;
    const ep = claim.endpoints.get(endpointId);
    if (ep && (ep.delivery_order === "ordered" || ep.rate_limit !== null)) return true;
  }
  return false;
}
