// The server's programmatic API: embed it, or start it in other packages' tests.
export { startServer, type RunningServer, type StartServerOptions } from "./server.js";
export { startWorker } from "./worker.js";
export { loadConfig, type Config, type DeliveryConfig } from "./config.js";
export { openDatabase, type Database } from "./db/client.js";
export { findMigrationsDir, migrate } from "./db/migrate.js";
export { databaseFromPglite } from "./db/pglite.js";
export { staticResolver, systemResolver, type Resolver } from "./net/resolver.js";
export { ALL_SCOPES, PUBLIC_SCOPES, INTERNAL_SCOPES } from "./services/tokens.service.js";
import type { Database } from "./db/client.js";
import { tokensRepo } from "./repos/tokens.repo.js";
import { tokensService } from "./services/tokens.service.js";

/** Creates an org (the CLI's `orgs create`). */
export function createOrg(db: Database, { name }: { name: string }) {
  return tokensService(tokensRepo(db)).createOrg(name);
}

/** Mints a token for an org (the CLI's `tokens create`); the token is returned only here. */
export function createToken(db: Database, { orgId, scopes, name }: { orgId: string; scopes: readonly string[]; name?: string }) {
  return tokensService(tokensRepo(db)).createToken(orgId, scopes, name);
}

// Housekeeping (partitions, retention, expired keys): the retention bench drives it on a simulated clock.
export { createHousekeeper, type HousekeepingSummary } from "./housekeeping/housekeeper.js";
export { retention, dayStart, DAY_MS } from "./domain/retention.js";
