// The webhook-listener streams this process holds, fed by the listener transport's observer.
// The end reasons are a closed list (transports/listener.ts StreamEnd).
import { Counter, Gauge, type Registry } from "prom-client";
import type { ListenerObserver, StreamEnd } from "../delivery/transports/listener.js";

const ENDS: readonly StreamEnd[] = ["client", "slow_client", "revoked", "listener_gone", "replaced", "shutdown"];

export function listenerStreamMetrics(registry: Registry): ListenerObserver {
  const registers = [registry];
  const open = new Gauge({ name: "ars_listener_streams", help: "Webhook listener streams this process holds open.", registers });
  const closed = new Counter({
    name: "ars_listener_streams_closed_total",
    help: "Webhook listener streams ended, by why: client (it disconnected), slow_client (it stopped reading: dropped at the buffer bound), revoked (its token was revoked or lost webhooks:write), listener_gone (deleted or disabled), replaced (its client reconnected: the newer stream took over), shutdown.",
    labelNames: ["reason"] as const,
    registers,
  });
  for (const why of ENDS) closed.labels(why).inc(0);
  return {
    streamOpened: () => open.inc(),
    streamClosed(why) {
      open.dec();
      closed.labels(why).inc();
    },
  };
}
