// The webhook portal, as an operator watches it: links minted, links refused, sessions started
// and ended (no org, session or token in any label), and the sessions open now, read from the
// database at each scrape so every process reports the same number.
import { Counter, Gauge, type Registry } from "prom-client";
import type { Database } from "../db/client.js";
import type { Logger } from "../lib/logger.js";
import { portalSessionsRepo } from "../repos/portal-sessions.repo.js";

export type PortalRefusal = "unknown" | "used" | "expired" | "revoked";
export type PortalEnd = "signed_out" | "expired" | "revoked";

export interface PortalObserver {
  linkCreated(readOnly: boolean): void;
  linkRefused(reason: PortalRefusal): void;
  sessionStarted(readOnly: boolean): void;
  sessionEnded(reason: PortalEnd): void;
}

export function portalMetrics(registry: Registry, db: Database, logger: Logger): PortalObserver {
  const registers = [registry];
  const repo = portalSessionsRepo(db);
  const links = new Counter({ name: "ars_portal_links_created_total", help: "Portal links minted (POST /v2/portal_sessions), by access: read_only or read_write.", labelNames: ["access"] as const, registers });
  const refused = new Counter({ name: "ars_portal_links_refused_total", help: "Portal links opened that could not start a session: unknown, used, expired, or their token revoked.", labelNames: ["reason"] as const, registers });
  const started = new Counter({ name: "ars_portal_sessions_started_total", help: "Portal sessions started (a link opened), by access.", labelNames: ["access"] as const, registers });
  const ended = new Counter({ name: "ars_portal_sessions_ended_total", help: "Portal sessions ended: signed_out, or noticed expired or revoked on a request.", labelNames: ["reason"] as const, registers });
  new Gauge({
    name: "ars_portal_sessions_active",
    help: "Portal sessions open now (started, not ended, not expired, their token not revoked), read from the database at scrape.",
    registers,
    async collect() {
      try {
        this.set(await repo.countActive());
      } catch (err) {
        logger.warn({ err: err instanceof Error ? err.message : String(err) }, "metrics: portal sessions could not be counted");
        this.set(NaN);
      }
    },
  });
  const access = (readOnly: boolean) => (readOnly ? "read_only" : "read_write");
  for (const a of ["read_only", "read_write"]) {
    links.labels(a).inc(0);
    started.labels(a).inc(0);
  }
  for (const r of ["unknown", "used", "expired", "revoked"] satisfies PortalRefusal[]) refused.labels(r).inc(0);
  for (const r of ["signed_out", "expired", "revoked"] satisfies PortalEnd[]) ended.labels(r).inc(0);
  return {
    linkCreated: (readOnly) => links.labels(access(readOnly)).inc(),
    linkRefused: (reason) => refused.labels(reason).inc(),
    sessionStarted: (readOnly) => started.labels(access(readOnly)).inc(),
    sessionEnded: (reason) => ended.labels(reason).inc(),
  };
}
