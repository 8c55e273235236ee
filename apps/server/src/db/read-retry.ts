// A read that lost its database connection runs once more before anyone sees an error
// (docs/api-decisions.md, "A lost database connection"), on a connection opened for it: after a
// termination or a restart the pool may still hold connections whose end it has not heard of
// yet (the backends end one by one), and a second run on one of those would fail the same way.
// Only a statement that cannot change anything runs again, and only outside a transaction (a
// transaction lives and dies with its connection). A write that lost its connection may have
// committed: it fails, and the API answers 503 so that the client decides, with its
// Idempotency-Key, whether to send it again.
import type { SqlDriverAdapterFactory } from "@prisma/client/runtime/client";
import { isConnectionLoss } from "../lib/connection-loss.js";
import type { ConnectionRetryCounts } from "./types.js";

type SqlDriverAdapter = Awaited<ReturnType<SqlDriverAdapterFactory["connect"]>>;

/**
 * Whatever could make a SELECT write, lock or signal: such a statement is never run twice. The
 * advisory-lock functions are matched inside their names (pg_try_advisory_xact_lock, …).
 */
const NOT_A_PURE_READ = /\b(insert|update|delete|merge|truncate|share|into|nextval|setval|set_config|pg_notify|pg_terminate_backend|pg_cancel_backend)\b|advisory/i;

/** Leading blanks, `--` comments and `/* *\/` comments, which may precede the first keyword. */
const LEADING_NOISE = /^(\s+|--[^\n]*\n?|\/\*[\s\S]*?\*\/)+/;

/**
 * True for a SELECT (or a WITH … SELECT) that neither modifies, locks (FOR UPDATE/SHARE), takes
 * an advisory lock, notifies nor draws a sequence value: running it twice is the same as once.
 * Conservative: a read it is unsure of counts as a write, and merely is not retried.
 */
export function isPureRead(sql: string): boolean {
  const text = sql.replace(LEADING_NOISE, "");
  return /^(select|with)\b/i.test(text) && !NOT_A_PURE_READ.test(text);
}

export interface ReadRetry {
  /**
   * Runs `attempt(false)` (on the pool); when it is a pure read of `sql` and lost its connection,
   * runs `attempt(true)` (on a fresh connection) once.
   */
  run<T>(sql: string, attempt: (fresh: boolean) => Promise<T>): Promise<T>;
  /** The retries so far, by how the second run ended. */
  counts(): ConnectionRetryCounts;
}

export function createReadRetry(): ReadRetry {
  const counts: ConnectionRetryCounts = { retriedOk: 0, gaveUp: 0 };
  return {
    async run(sql, attempt) {
      try {
        return await attempt(false);
      } catch (err) {
        if (!isConnectionLoss(err) || !isPureRead(sql)) throw err;
        try {
          const result = await attempt(true);
          counts.retriedOk++;
          return result;
        } catch (again) {
          counts.gaveUp++;
          throw again;
        }
      }
    },
    counts: () => ({ ...counts }),
  };
}

/**
 * Prisma's driver adapter with the same rule for the statements it runs on the pool, the second
 * run going through `fresh` (an adapter over fresh connections); those of its transactions
 * (`startTransaction`) run as they are.
 */
export function withReadRetry(factory: SqlDriverAdapterFactory, fresh: SqlDriverAdapterFactory, retry: ReadRetry): SqlDriverAdapterFactory {
  return {
    provider: factory.provider,
    adapterName: factory.adapterName,
    async connect(): Promise<SqlDriverAdapter> {
      const adapter = await factory.connect();
      let freshAdapter: Promise<SqlDriverAdapter> | undefined;
      const retrying: SqlDriverAdapter = {
        provider: adapter.provider,
        adapterName: adapter.adapterName,
        queryRaw: (query) => retry.run(query.sql, async (again) => (again ? await (freshAdapter ??= fresh.connect()) : adapter).queryRaw(query)),
        executeRaw: (query) => adapter.executeRaw(query),
        executeScript: (script) => adapter.executeScript(script),
        startTransaction: (isolationLevel) => adapter.startTransaction(isolationLevel),
        dispose: async () => {
          await adapter.dispose();
          if (freshAdapter) await (await freshAdapter).dispose();
        },
      };
      if (adapter.getConnectionInfo) retrying.getConnectionInfo = adapter.getConnectionInfo.bind(adapter);
      return retrying;
    },
  };
}
