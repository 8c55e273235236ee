// The rate limit counts in fixed windows aligned on the database's clock (repos/rate-limits.repo.ts).
// A test that counts a token up to its limit must not straddle a window's end, or the count
// starts over midway and the request that should be refused is admitted.
import type { SqlExecutor } from "../../src/db/client.js";
import { RATE_LIMIT_WINDOW_MS, windowStartSql } from "../../src/repos/rate-limits.repo.js";

/** When fewer than `needSeconds` are left of the database's current window, waits for the next one to begin. */
export async function stayInOneWindow(db: SqlExecutor, needSeconds: number): Promise<void> {
  const [row] = await db.query<{ left: number }>(
    `SELECT extract(epoch FROM ${windowStartSql("$1")} + $1::int * interval '1 millisecond' - now())::float8 AS left`,
    [RATE_LIMIT_WINDOW_MS],
  );
  if (row!.left < needSeconds) await new Promise((r) => setTimeout(r, row!.left * 1000 + 50));
}
