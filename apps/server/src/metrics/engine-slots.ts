// What the delivery engine holds in memory, read at scrape time from the dispatcher's slot
// accounting: rows waiting for a slot, on the wire, and sent but not yet recorded, against the
// most it may hold. Recording that lags (a slow or stalled database) shows as `recording` rising
// to the limit while claiming waits (docs/delivery.md#backpressure); slow receivers' rows show in
// their own lane (docs/delivery.md#slow-receivers).
import { Gauge, type Registry } from "prom-client";
import type { Dispatcher } from "../delivery/dispatcher.js";

export interface EngineSlotGauges {
  /** Reads this dispatcher's slots at every scrape (a process without an engine never calls it). */
  watch(dispatcher: Pick<Dispatcher, "stats">): void;
}

export function engineSlotGauges(registry: Registry): EngineSlotGauges {
  let read: Pick<Dispatcher, "stats"> | null = null;
  new Gauge({
    name: "ars_delivery_rows_held",
    help: "Claimed deliveries this engine holds: state waiting (for a slot), sending (on the wire) or recording (sent, outcome not yet written).",
    labelNames: ["state"] as const,
    registers: [registry],
    collect() {
      if (!read) return;
      const s = read.stats();
      this.set({ state: "waiting" }, s.waiting);
      this.set({ state: "sending" }, s.sending);
      this.set({ state: "recording" }, s.unrecorded);
    },
  });
  new Gauge({
    name: "ars_delivery_rows_held_limit",
    help: "The most claimed deliveries this engine may hold however slowly outcomes are recorded: claiming waits at it.",
    registers: [registry],
    collect() {
      if (read) this.set(read.stats().maxHeld);
    },
  });
  new Gauge({
    name: "ars_delivery_slow_lane_rows",
    help: "Held deliveries of slow receivers (an attempt on the wire for 1 s or more): counted in a lane of their own, up to the engine's concurrency, so they take no slot of the other endpoints.",
    registers: [registry],
    collect() {
      if (read) this.set(read.stats().slow);
    },
  });
  return {
    watch(dispatcher) {
      read = dispatcher;
    },
  };
}
