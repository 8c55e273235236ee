// The shared rate limit's traffic to the database (http/rate-limit.ts): processes take shares of
// each token's window in batched statements rather than counting every request there, so these
// show how often that happens and how many tokens each statement carries (no token in any label).
import { Counter, type Registry } from "prom-client";

export interface RateLimitObserver {
  /** One statement that took shares for `keys` tokens; `ok` false when it failed (requests went on uncounted). */
  synced(keys: number, ok: boolean): void;
}

export function rateLimitMetrics(registry: Registry): RateLimitObserver {
  const registers = [registry];
  const syncs = new Counter({
    name: "ars_rate_limit_syncs_total",
    help: "Statements that took shares of tokens' rate-limit windows from the database, by outcome (ok, error); one per batch of tokens, not per request.",
    labelNames: ["outcome"] as const,
    registers,
  });
  const keys = new Counter({
    name: "ars_rate_limit_synced_keys_total",
    help: "Tokens whose rate-limit share those statements took (divided by ars_rate_limit_syncs_total: tokens per statement).",
    registers,
  });
  return {
    synced(n, ok) {
      syncs.inc({ outcome: ok ? "ok" : "error" });
      if (ok) keys.inc(n);
    },
  };
}
