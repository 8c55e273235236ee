// The one INSERT of new deliveries, as fan-out creates them (domain/delivery/fan-out.ts): every
// statement that stores an event with its deliveries (publishing, a batch, an operational
// notification, a test notification) writes its rows through this fragment, so the column list
// and the first state are written once.
import { newDelivery, type NewDelivery } from "../domain/delivery/fan-out.js";
import { uuidv7Sql } from "./uuidv7-sql.js";

/** SQL expressions of a new delivery's first state: NewDelivery's fields. */
export interface FirstStateSql {
  status: string;
  attemptCount: string;
  nextAttemptAt: string;
  nextTrigger: string;
}

/** The first state as four parameters from `$n`, in the order firstStateParams gives them. */
export const firstStateParamsSql = (n: number): FirstStateSql => ({
  status: `$${n}`,
  attemptCount: `$${n + 1}`,
  nextAttemptAt: `$${n + 2}`,
  nextTrigger: `$${n + 3}`,
});

/** The values of firstStateParamsSql's four parameters. */
export const firstStateParams = (first: NewDelivery): [string, number, Date, string] => [
  first.status,
  first.attempt_count,
  first.next_attempt_at,
  first.next_trigger,
];

const FIRST = newDelivery(false, new Date(0));

/**
 * A (non-test) delivery's first state as literals, due at the SQL expression `at`: for the
 * statements that store their event and its deliveries without parameters per delivery.
 */
export const firstStateAtSql = (at: string): FirstStateSql => ({
  status: `'${FIRST.status}'`,
  attemptCount: `${FIRST.attempt_count}`,
  nextAttemptAt: at,
  nextTrigger: `'${FIRST.next_trigger}'`,
});

/** SQL expressions, over the rows a statement selects, of a new delivery's columns. */
export interface NewDeliverySql {
  /** created_at and updated_at, and the instant of the delivery's UUIDv7 id (its day partition) */
  at: string;
  orgId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  auditId: string;
  isTest: string;
  eventOccurredAt: string;
  first: FirstStateSql;
}

/**
 * `INSERT INTO webhook_deliveries (…) SELECT …` of new deliveries; the caller appends its FROM,
 * WHERE, ON CONFLICT and RETURNING.
 */
export const insertNewDeliveriesSql = (d: NewDeliverySql) =>
  `INSERT INTO webhook_deliveries (id, org_id, endpoint_id, event_id, event_type, audit_id, is_test, status, attempt_count,
                                  next_attempt_at, created_at, updated_at, next_trigger, event_occurred_at)
  SELECT ${uuidv7Sql(d.at)}, ${d.orgId}, ${d.endpointId}, ${d.eventId}, ${d.eventType}, ${d.auditId}, ${d.isTest},
         ${d.first.status}, ${d.first.attemptCount}, ${d.first.nextAttemptAt}, ${d.at}, ${d.at}, ${d.first.nextTrigger}, ${d.eventOccurredAt}`;
