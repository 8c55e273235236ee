// Reads the API ran a second time because the first lost its database connection, by how the
// second run ended. Two label values, so the series stay bounded.
import { Counter, type Registry } from "prom-client";

export type ConnectionRetryOutcome = "retried_ok" | "gave_up";

export interface ConnectionRetries {
  observe(outcome: ConnectionRetryOutcome): void;
}

export function connectionRetries(registry: Registry): ConnectionRetries {
  const counter = new Counter({
    name: "ars_db_connection_retries_total",
    help: "API reads retried on a fresh database connection after losing theirs: retried_ok (the retry answered), gave_up (it failed too; the client got a 503).",
    labelNames: ["outcome"] as const,
    registers: [registry],
  });
  const children = { retried_ok: counter.labels("retried_ok"), gave_up: counter.labels("gave_up") };
  // both series exist from the start, so a rate() over them never begins with a gap
  children.retried_ok.inc(0);
  children.gave_up.inc(0);
  return { observe: (outcome) => children[outcome].inc() };
}
