// The options every process role starts from (API server, worker): the environment's
// configuration with the caller's on top. Its own module so the worker does not load the HTTP stack.
import { DEFAULT_DELIVERY, loadConfig, type Config, type DeliveryConfig } from "./config.js";
import type { Database } from "./db/types.js";
import type { DepsOverrides } from "./deps.js";

export interface StartServerOptions extends Partial<Omit<Config, "delivery">>, DepsOverrides {
  delivery?: Partial<DeliveryConfig>;
}

/** The environment's configuration with the caller's options on top (shared by every process role). */
export function resolveStartOptions(opts: StartServerOptions): { config: Config; overrides: DepsOverrides } {
  const { logger, resolver, extraCa, migrate, database, clock, delivery, ...overrides } = opts;
  const base = loadConfig();
  const config: Config = {
    ...base,
    ...Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined)),
    delivery: { ...DEFAULT_DELIVERY, ...base.delivery, ...delivery },
  };
  return { config, overrides: { logger, resolver, extraCa, migrate, database, clock } };
}

/** Which database the process will open: the one handed in, else PostgreSQL when a URL is configured. */
export function databaseKind(config: Config, overrides: DepsOverrides): Database["kind"] {
  return overrides.database?.kind ?? (config.databaseUrl ? "postgres" : "pglite");
}
