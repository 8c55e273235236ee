// The API's request durations, by operation (the contract's operationId) and status class. Label
// values are bounded: operationIds come from the contract, anything else is `unmatched`.
import { Histogram, type Registry } from "prom-client";

/** The `operation` of requests that matched no operation of the contract (404s, probes, typos). */
export const UNMATCHED = "unmatched";

export interface RequestDurations {
  /** Records one request; `operation` is the contract's operationId (or undefined). */
  observe(operation: string | undefined, status: number, seconds: number): void;
}

export function requestDurations(registry: Registry): RequestDurations {
  const histogram = new Histogram({
    name: "ars_http_request_duration_seconds",
    help: "API request durations, by contract operationId and status class (1xx..5xx).",
    labelNames: ["operation", "status_class"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  // One child per operation and class, made on first use and kept: a request costs a map lookup
  // and an observe, never a label hash or an allocation.
  const children = new Map<string, Array<Histogram.Internal<"operation" | "status_class"> | undefined>>();
  return {
    observe(operation = UNMATCHED, status, seconds) {
      let byClass = children.get(operation);
      if (!byClass) children.set(operation, (byClass = []));
      const c = Math.min(5, Math.max(1, Math.floor(status / 100)));
      (byClass[c] ??= histogram.labels(operation, `${c}xx`)).observe(seconds);
    },
  };
}
