// Operational notifications (the contract's EventType and OperationalEventData;
// docs/delivery.md#operational-notifications) as SQL: the one shape of their stored data, and the
// fan-out that stores each as an event with one delivery per subscribed operational endpoint. It
// runs inside the statement or transaction that records the change it reports, so a change is
// never committed without its notification, and a change recorded once is notified once.
import { firstStateAtSql, firstStateParamsSql, insertNewDeliveriesSql } from "./new-delivery-sql.js";
import { uuidv7Sql } from "./uuidv7-sql.js";
import type { StatementRunner } from "./delivery-sql.js";

/** SQL expressions, over the statement's rows, of what a notification says. */
export interface NoticeParts {
  endpointId: string;
  url: string;
  failingSince: string;
  disabledReason: string;
  /** a jsonb expression: exhaustedDeliverySql, or NULL */
  delivery: string;
}

/** The stored data of a notification: the contract's OperationalEventData, field for field. */
export const noticeDataSql = (p: NoticeParts) =>
  `jsonb_build_object('endpoint_id', ${p.endpointId}, 'endpoint_url', ${p.url}, 'failing_since', ${p.failingSince},
                      'disabled_reason', ${p.disabledReason}, 'delivery', ${p.delivery})`;

/** The contract's ExhaustedDelivery, from SQL expressions of the delivery row and its last outcome. */
export const exhaustedDeliverySql = (p: { id: string; eventId: string; eventType: string; attemptCount: string; status: string; errorCode: string; errorMessage: string }) =>
  `jsonb_build_object('id', ${p.id}, 'event_id', ${p.eventId}, 'event_type', ${p.eventType}, 'attempt_count', ${p.attemptCount},
                      'last_response_status', ${p.status},
                      'last_error', CASE WHEN ${p.errorCode} IS NULL THEN NULL ELSE jsonb_build_object('code', ${p.errorCode}, 'message', ${p.errorMessage}) END)`;

/**
 * Only audit endpoints are notified about: an operational endpoint's troubles would feed
 * themselves, and a webhook listener (a developer's stream, `listener_connected_until` set) comes
 * and goes with a laptop.
 */
export const NOTIFIES = (endpoint: string) => `(${endpoint}.kind = 'audit' AND ${endpoint}.listener_connected_until IS NULL)`;

/**
 * Two CTEs storing the rows of CTE `source` (org_id, type, at, data) as events, created at `at`,
 * each with one pending delivery per live, enabled operational endpoint of its org subscribed to
 * its type (as fan-out creates deliveries: domain/delivery/fan-out.ts). `notice_events` answers
 * (id, org_id, type, created_at, endpoint_id) per stored notification.
 */
export const noticeFanOutSql = (source: string) => `notice_events AS (
  INSERT INTO events (id, org_id, type, data, occurred_at, created_at, is_test)
  SELECT ${uuidv7Sql("n.at")}, n.org_id, n.type, n.data, n.at, n.at, false FROM ${source} n
  RETURNING id, org_id, type, created_at, data->>'endpoint_id' AS endpoint_id
), notice_deliveries AS (
  ${insertNewDeliveriesSql({
    at: "ev.created_at", orgId: "ev.org_id", endpointId: "o.id", eventId: "ev.id", eventType: "ev.type", auditId: "NULL", isTest: "false",
    eventOccurredAt: "ev.created_at", first: firstStateAtSql("ev.created_at"),
  })}
    FROM notice_events ev
    JOIN webhook_endpoints o ON o.org_id = ev.org_id AND o.kind = 'operational' AND o.deleted_at IS NULL
                            AND o.status = 'enabled' AND ev.type = ANY (o.event_types)
  RETURNING event_id
)`;

/** A notification stored: its type and the endpoint it is about. */
export interface NoticeMade {
  type: string;
  endpointId: string;
}

const DISABLED_NOTICE = `
WITH disabled AS (
  SELECT e.org_id, 'webhook_endpoint.disabled'::text AS type, $2::timestamptz AS at,
         ${noticeDataSql({ endpointId: "e.id", url: "e.url", failingSince: "e.failing_since", disabledReason: "e.disabled_reason", delivery: "NULL::jsonb" })} AS data
    FROM webhook_endpoints e
   WHERE e.id = $1::uuid AND e.status = 'disabled' AND ${NOTIFIES("e")}
), ${noticeFanOutSql("disabled")}
SELECT ev.type, ev.endpoint_id FROM notice_events ev`;

/**
 * `webhook_endpoint.disabled` for an endpoint this transaction just disabled (by hand, by a 410,
 * or by the health rule): call it after the row was written, in the same transaction.
 */
export async function notifyDisabled(tx: StatementRunner, endpointId: string, at: Date): Promise<NoticeMade[]> {
  const rows = await tx.query<{ type: string; endpoint_id: string }>(DISABLED_NOTICE, [endpointId, at]);
  return rows.map((r) => ({ type: r.type, endpointId: r.endpoint_id }));
}

/**
 * A sample for *Send a test event* to an operational endpoint: `webhook_endpoint.failing` about
 * the endpoint itself, flagged is_test, queued for that endpoint only ($3..$6: firstStateParams of
 * its first delivery, as domain/delivery/fan-out.ts makes it). Answers the delivery's id; none when the endpoint is
 * no longer live and enabled.
 */
export const TEST_NOTICE = `
WITH ev AS (
  INSERT INTO events (id, org_id, type, data, occurred_at, created_at, is_test)
  SELECT ${uuidv7Sql("$2")}, e.org_id, 'webhook_endpoint.failing',
         ${noticeDataSql({ endpointId: "e.id", url: "e.url", failingSince: "$2::timestamptz", disabledReason: "NULL::text", delivery: "NULL::jsonb" })},
         $2, $2, true
    FROM webhook_endpoints e
   WHERE e.id = $1::uuid AND e.deleted_at IS NULL AND e.status = 'enabled'
  RETURNING id, org_id, type, created_at
)
${insertNewDeliveriesSql({
  at: "ev.created_at", orgId: "ev.org_id", endpointId: "$1::uuid", eventId: "ev.id", eventType: "ev.type", auditId: "NULL", isTest: "true",
  eventOccurredAt: "ev.created_at", first: firstStateParamsSql(3),
})}
  FROM ev
RETURNING id`;
