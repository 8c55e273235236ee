// The delivery engine's counters and histograms, fed by its observer callbacks. Every label value
// comes from a closed list (stored statuses, the contract's error codes, disable reasons).
import { Counter, Histogram, type Registry } from "prom-client";
import type { DeliveryObserver } from "../delivery/observer.js";
import { DELIVERY_ERROR_CODES, OPERATIONAL_EVENT_TYPES, stored } from "../lib/stored-values.js";

const NO_ERROR = "none";

export function deliveryMetrics(registry: Registry): DeliveryObserver {
  const registers = [registry];
  const outcomes = new Counter({
    name: "ars_delivery_outcomes_total",
    help: "Delivery outcomes recorded: outcome is the status stored (succeeded, retrying, failed) or lease_lost; error_code is last_error.code (none on success).",
    labelNames: ["outcome", "error_code"] as const,
    registers,
  });
  const attempts = new Histogram({
    name: "ars_delivery_attempt_duration_seconds",
    help: "Duration of attempts to send a delivery to its receiver.",
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30],
    registers,
  });
  const firstAttempt = new Histogram({
    name: "ars_delivery_first_attempt_delay_seconds",
    help: "Time from a delivery's creation (its event stored) to the start of its first attempt.",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers,
  });
  const batches = new Histogram({
    name: "ars_delivery_record_batch_size",
    help: "Outcomes written per recorder batch (group commit).",
    buckets: [1, 2, 5, 10, 20, 50, 100, 200],
    registers,
  });
  const disabled = new Counter({
    name: "ars_webhook_endpoints_auto_disabled_total",
    help: "Endpoints the engine disabled: reason gone (the receiver answered 410) or failing (failing for too long).",
    labelNames: ["reason"] as const,
    registers,
  });
  const dropped = new Counter({
    name: "ars_delivery_rows_dropped_total",
    help: "Claimed deliveries given back unsent because their lease was taken or ran short while they waited (another worker sends them once).",
    registers,
  });
  const throttled = new Counter({
    name: "ars_deliveries_throttled_total",
    help: "Claims that left a rate-limited endpoint's due deliveries waiting for its rate_limit (one per endpoint per claim): they wait, never fail.",
    registers,
  });
  const orderedHeld = new Counter({
    name: "ars_delivery_ordered_holds_total",
    help: "Retries scheduled on ordered endpoints: each holds the endpoint's later deliveries until it succeeds or fails for good (head-of-line blocking).",
    registers,
  });
  const notified = new Counter({
    name: "ars_operational_notifications_total",
    help: "Operational notifications made (type: webhook_endpoint.failing, .disabled, .recovered, webhook_delivery.exhausted), each stored as an event and queued for the org's operational endpoints.",
    labelNames: ["type"] as const,
    registers,
  });
  // The series an alert or a rate() looks at exist from the start at 0, so the first increment
  // is seen as one (a series born at 1 hides it from increase()).
  outcomes.labels("succeeded", NO_ERROR).inc(0);
  for (const code of DELIVERY_ERROR_CODES) for (const outcome of ["retrying", "failed"]) outcomes.labels(outcome, code).inc(0);
  for (const reason of ["gone", "failing"]) disabled.labels(reason).inc(0);
  for (const type of OPERATIONAL_EVENT_TYPES) notified.labels(type).inc(0);
  return {
    outcome: (outcome, code) => outcomes.labels(outcome, code ?? NO_ERROR).inc(),
    attempt: (ms) => attempts.observe(ms / 1000),
    firstAttempt: (ms) => firstAttempt.observe(Math.max(0, ms) / 1000),
    recordBatch: (size) => batches.observe(size),
    endpointDisabled: (reason) => disabled.labels(reason).inc(),
    rowsDropped: (count) => dropped.inc(count),
    throttled: (endpoints) => throttled.inc(endpoints),
    orderedHeld: () => orderedHeld.inc(),
    // the stored CHECK allows only these types: anything else fails loudly rather than becoming a label value
    notified: (type) => notified.labels(stored(OPERATIONAL_EVENT_TYPES, type)).inc(),
  };
}
