// The delivery engine alone, without HTTP: the `worker` role for scaling deliveries out. Any
// number of workers (and servers with their in-process dispatcher) can share one PostgreSQL;
// on the embedded database only one process can open the data directory, so there the server's
// own dispatcher is the engine.
import { createDeps, type Deps } from "./deps.js";
import { applyV8Flags, logV8Flags } from "./v8-flags.js";
import { databaseKind, resolveStartOptions, type StartServerOptions } from "./start-options.js";

export type StartWorkerOptions = Omit<StartServerOptions, "dispatcher" | "port" | "host">;

export interface RunningWorker {
  deps: Deps;
  dispatcher: Deps["dispatcher"];
  /** Stops claiming, lets in-flight attempts finish and record, then closes the database. */
  close(): Promise<void>;
}

export async function startWorker(opts: StartWorkerOptions = {}): Promise<RunningWorker> {
  const { config, overrides } = resolveStartOptions({ ...opts, dispatcher: true });
  const v8Flags = applyV8Flags(config.workerHeap, databaseKind(config, overrides));
  const deps = await createDeps(config, { ...overrides, servesLists: false });
  logV8Flags(deps.logger, v8Flags);
  const { dispatcher } = deps;
  try {
    // Partitions for today and the days ahead exist before the first delivery is recorded.
    await deps.housekeeper.start();
  } catch (err) {
    // Nothing may outlive a failed start: the pools, the LISTEN client, the metrics port.
    await deps.close().catch((closeErr: unknown) => deps.logger.warn({ err: String(closeErr) }, "releasing what a failed start-up opened failed"));
    throw err;
  }
  dispatcher.start();
  deps.logger.info({ dispatcher: dispatcher.id, database: deps.db.kind }, "delivery worker started");
  let closing: Promise<void> | undefined;
  return {
    deps,
    dispatcher,
    close() {
      closing ??= deps.close();
      return closing;
    },
  };
}
