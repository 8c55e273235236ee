import { createHash } from "node:crypto";
import type { SqlExecutor } from "../db/client.js";
import { InvalidCursorError } from "../lib/errors.js";
import { dayEitherSide, idTimeWindow } from "../lib/ids.js";
import type { Page, PageRequest } from "../lib/page.js";
import type { CountCache } from "./count-cache.js";

export type { Page, PageRequest } from "../lib/page.js";

/**
 * Keyset pagination shared by every list (Stripe cursor semantics, newest first).
 *
 * `keysetReader` is the read path of the large lists: one SQL statement per page through the
 * driver, the cursor folded into it (no separate lookup), the SQL text built once per query
 * shape. `paginate` is the Prisma form kept for the small lists (endpoints, attempts); its
 * `where` is built here rather than with Prisma's `cursor:` option, which has dropped LIMIT and
 * returned wrong pages (prisma/orm#27094, #29176).
 */

/** One filter: `t.<column> <op> $n`. Columns and operators are code, never input. */
export interface Condition {
  readonly column: string;
  readonly op: "=" | "<" | ">" | "= ANY";
  readonly value: unknown;
}

export interface ListTable {
  /** The table (a trusted identifier). */
  readonly table: string;
  /** The select list over the alias `t`. */
  readonly columns: string;
  /**
   * Partitioned by day on created_at, with UUIDv7 ids: the cursor row is looked up only in the
   * partitions its id's time names (lib/ids.ts idTimeWindow), not in every day of the window.
   */
  readonly dayPartitioned?: boolean;
  /**
   * Partitioned by day on created_at: where a first page looks first (the start of the clock's
   * previous day). A first page's plan holds every day partition, and PostgreSQL 15 locks and
   * starts each one it cannot prune when the statement starts: over 46 days the page cost 0.43
   * against 0.33 ms over 9. Bounded by this parameter it starts the recent days only (bench/NOTES.md,
   * "The first page over the days kept").
   */
  readonly recentFrom?: () => Date;
  /**
   * The reads run where PostgreSQL keeps one plan per statement (the lists' pool, db/postgres.ts).
   * Then a page after a cursor of a `dayPartitioned` table reads the days its cursor's id names
   * first, by plain parameters that prune the other days before the statement starts.
   */
  readonly plansKept?: boolean;
  /**
   * Where a cursor's row (its created_at and id) is looked up, when not in `table`: an index of the
   * table's ids across its day partitions. Events' ids are their publishers', so no id names its
   * day, and the look-up in `events` probed every kept day (over 46, that subselect set up 46 scans).
   */
  readonly cursorFrom?: string;
  /**
   * Partitioned by day on created_at, ids that name no day: the created_at of the rows at each end
   * of the pages this process served are remembered, and where plans are kept, a page after such a
   * cursor reads the days around it first (as `dayPartitioned` does by the id's time). A client
   * walking the list sends the last page's end as its cursor.
   */
  readonly remembersCursors?: boolean;
}

export type Walk = "first" | "older" | "newer";

/** `t.org_id = $1` and each condition on the following parameters. */
const filterSql = (conditions: readonly Condition[]): string[] => [
  "t.org_id = $1",
  ...conditions.map((c, i) => (c.op === "= ANY" ? `t.${c.column} = ANY($${i + 2})` : `t.${c.column} ${c.op} $${i + 2}`)),
];

/** What a page fetches past its limit is one row (whether there is more), then up to the next of these. */
const FETCH_SIZES = [11, 26, 51, 101];

/**
 * The rows a page of `limit` fetches: its limit and one more, rounded up to one of a few sizes.
 * The LIMIT is written into the statement's text rather than passed: with a parameter for it,
 * PostgreSQL judged a plan made without the values dearer than one made for them and planned
 * every page again, which over 40 day partitions took longer than reading the page (bench/NOTES.md,
 * "Planning over day partitions"); a few sizes keep a few statements per connection.
 */
export const fetchSize = (limit: number): number => FETCH_SIZES.find((n) => n > limit) ?? limit + 1;

/**
 * The whole list's page, or (`near`) only the rows near it: a first page of the rows created from
 * the last parameter on (`ListTable.recentFrom`), a page after a cursor of the rows within a day
 * either side of it (its id's time, or its row's as remembered: `ListTable.plansKept`,
 * `remembersCursors`), the last two parameters. A near page that comes back full is the page.
 */
export function pageSql(source: ListTable, conditions: readonly Condition[], walk: Walk, fetch: number, near = false): string {
  const where = filterSql(conditions);
  const next = conditions.length + 2;
  const recent = near && walk === "first";
  // a cursor's days: its id's (`dayPartitioned`), or its row's as remembered (`remembersCursors`)
  const windowed = near && walk !== "first";
  // PostgreSQL prunes the older days as the statement starts, so a kept plan sets up the recent
  // days' scans only (the history's too, through the cast). The deliveries' and events' pages run
  // where plans are always kept (the lists' pool, db/postgres.ts); elsewhere (the embedded
  // database) PostgreSQL chooses, and a plain timestamptz parameter let it prune the days in a
  // plan made for the values, priced below the kept plan, and plan such a page again every time
  // (1 ms over 46 days). A cast through text, which depends on the session's time zone, is not
  // folded when planning: both plans hold every day, and over many days the kept one is kept.
  if (recent) where.push(source.plansKept ? `t.created_at >= $${next}::timestamptz` : `t.created_at >= ($${next}::text)::timestamptz`);
  if (walk !== "first") {
    // The cursor is a row comparison against an uncorrelated subselect: PostgreSQL runs it once
    // (an InitPlan) and uses its result as the index scan's start key, so the page after 900,000
    // rows reads what the first page reads. (A join would let the planner walk the list from
    // its newest row, filtering, with the cursor row inside the loop.) One round trip either way.
    // The window's bounds as scalar subqueries: values the executor prunes the day partitions by
    // when it runs, which leaves the plan made without the values as cheap as one made for them,
    // so PostgreSQL keeps it. Passed as plain parameters, they made every page's plan for its
    // values dearer to make than the page was to read (bench/NOTES.md, "Planning over day partitions").
    // Where plans are always kept, plain parameters prune the cursor's and the page's other days
    // before the statement starts (`windowed`); the subselects leave a scan of every day set up.
    const [from, until] = windowed ? [`$${next + 1}::timestamptz`, `$${next + 2}::timestamptz`] : [`(SELECT $${next + 1}::timestamptz)`, `(SELECT $${next + 2}::timestamptz)`];
    const window = source.dayPartitioned ? ` AND c.created_at >= ${from} AND c.created_at < ${until}` : "";
    if (windowed) where.push(`t.created_at >= ${from} AND t.created_at < ${until}`);
    const cursor = `(SELECT c.created_at, c.id FROM ${source.cursorFrom ?? source.table} c WHERE c.id = $${next} AND c.org_id = $1${window})`;
    where.push(`(t.created_at, t.id) ${walk === "older" ? "<" : ">"} ${cursor}`);
  }
  const order = walk === "newer" ? "t.created_at ASC, t.id ASC" : "t.created_at DESC, t.id DESC";
  return `SELECT ${source.columns} FROM ${source.table} t WHERE ${where.join(" AND ")} ORDER BY ${order} LIMIT ${Math.trunc(fetch)}`;
}

function countSql(source: ListTable, conditions: readonly Condition[]): string {
  return `SELECT count(*) AS n FROM ${source.table} t WHERE ${filterSql(conditions).join(" AND ")}`;
}

/** A list's statement and the name it is prepared under. */
interface Statement {
  sql: string;
  name: string;
}

/**
 * Prepared once per connection under a name its text decides (the same text, from any reader,
 * the same name): a page over 40 day partitions took longer to plan than to run, and PostgreSQL
 * plans an unnamed statement again each time (bench/NOTES.md, "Planning over day partitions").
 */
const named = (sql: string): Statement => ({ sql, name: `ars_list_${createHash("sha256").update(sql).digest("hex").slice(0, 24)}` });

/**
 * How long a list whose recent days held less than a page goes straight to the whole statement:
 * a quiet org's first page would otherwise read twice every time.
 */
const SPARSE_MS = 60_000;
const SPARSE_ENTRIES = 1_000;
/** Page ends remembered (`ListTable.remembersCursors`): two per page served, ≈ 100 bytes each. */
const CURSOR_ENTRIES = 10_000;

/** Pages of one list read through the driver; rows come back as the caller's row type. */
/**
 * `db` answers the pages and counts. When it is a replica (`primary` given), a cursor it does not
 * know may be a row it has not replayed yet (a client paging from an id the primary just gave
 * it): that page is read again on the primary before the cursor is called invalid.
 */
export function keysetReader<Row extends { id: string; created_at: Date | string }>(db: SqlExecutor, source: ListTable, counts: CountCache, primary?: SqlExecutor) {
  const statements = new Map<string, Statement>();
  const statement = (key: string, build: () => string): Statement => {
    let built = statements.get(key);
    if (built === undefined) statements.set(key, (built = named(build())));
    return built;
  };
  const shapeOf = (conditions: readonly Condition[]) => conditions.map((c) => `${c.column}${c.op}`).join(",");
  const cursorSql = `SELECT 1 AS found FROM ${source.cursorFrom ?? source.table} WHERE id = $1 AND org_id = $2`;
  // filter shape and values (the org's among them) → until when (the monotonic clock: this
  // process's own memory) its recent days are known to hold less than a page
  const sparse = new Map<string, number>();
  // a page end's id → its created_at (which never changes), the oldest forgotten first
  const ends = new Map<string, Date>();
  const remember = (row: Row | undefined) => {
    if (row === undefined || ends.has(row.id)) return;
    ends.set(row.id, new Date(row.created_at));
    if (ends.size > CURSOR_ENTRIES) ends.delete(ends.keys().next().value!);
  };
  /** The days around a cursor: by its UUIDv7's time, or by the created_at of a page end served here. */
  const cursorWindow = (cursorId: string): { from: Date; until: Date } | null => {
    if (source.dayPartitioned) return idTimeWindow(cursorId);
    const at = source.remembersCursors ? ends.get(cursorId) : undefined;
    return at === undefined ? null : dayEitherSide(at);
  };

  /**
   * A page: where the table allows, the rows near it first (`pageSql`'s `near`: a first page's
   * recent days, a cursor's days), and the whole list's statement only when those held less than
   * a page. A first page whose recent days did is remembered as such for a while.
   */
  async function readPage(on: SqlExecutor, conditions: readonly Condition[], walk: Walk, shape: string, fetch: number, params: unknown[], cursorId: string | undefined): Promise<Row[]> {
    const whole = statement(`${walk}:${shape}:${fetch}`, () => pageSql(source, conditions, walk, fetch));
    // a first page's filter shape and values, the org's among them (not built for other pages)
    const sparseKey = walk === "first" ? `${shape}\n${JSON.stringify(params)}` : "";
    let nearParams: unknown[] | null = null;
    if (walk === "first") {
      const sparseUntil = sparse.get(sparseKey);
      if (source.recentFrom && !(sparseUntil !== undefined && performance.now() < sparseUntil)) nearParams = [...params, source.recentFrom().toISOString()];
    } else if (source.plansKept && cursorId !== undefined) {
      const w = cursorWindow(cursorId);
      // a dayPartitioned page's parameters carry its window already (readOn)
      if (w) nearParams = source.dayPartitioned ? params : [...params, w.from.toISOString(), w.until.toISOString()];
    }
    if (nearParams) {
      const near = statement(`${walk}-near:${shape}:${fetch}`, () => pageSql(source, conditions, walk, fetch, true));
      // newest (or nearest) first: when the rows near the page fill it, they are the page
      const rows = await on.query<Row>(near.sql, nearParams, { name: near.name });
      if (walk === "first") {
        sparse.delete(sparseKey);
        if (rows.length < fetch) sparse.set(sparseKey, performance.now() + SPARSE_MS);
        if (sparse.size > SPARSE_ENTRIES) sparse.delete(sparse.keys().next().value!);
      }
      if (rows.length >= fetch) return rows;
    }
    return on.query<Row>(whole.sql, params, { name: whole.name });
  }

  async function count(orgId: string, conditions: readonly Condition[], shape: string): Promise<number> {
    const values = conditions.map((c) => c.value);
    const key = `${source.table}\n${orgId}\n${shape}\n${JSON.stringify(values)}`;
    return counts.get(key, async () => {
      const { sql, name } = statement(`count:${shape}`, () => countSql(source, conditions));
      const [row] = await db.query<{ n: number | bigint }>(sql, [orgId, ...values], { name });
      return Number(row!.n);
    });
  }

  async function readOn(on: SqlExecutor, orgId: string, conditions: readonly Condition[], page: PageRequest): Promise<Page<Row> | "unknown cursor"> {
    const cursorId = page.startingAfter ?? page.endingBefore;
    const walk: Walk = cursorId === undefined ? "first" : page.endingBefore !== undefined ? "newer" : "older";
    const shape = shapeOf(conditions);
    const fetch = fetchSize(page.limit);
    const params: unknown[] = [orgId];
    for (const c of conditions) params.push(c.value);
    if (cursorId !== undefined) params.push(cursorId);
    if (cursorId !== undefined && source.dayPartitioned) {
      // -infinity/infinity for an id that is not a UUIDv7: then every partition is looked in
      const w = cursorWindow(cursorId);
      params.push(w?.from ?? "-infinity", w?.until ?? "infinity");
    }
    // The page and the count run together; Promise.all settles both when either fails.
    const rows = readPage(on, conditions, walk, shape, fetch, params, cursorId);
    const [fetched, total] = await Promise.all([rows, page.includeTotal ? count(orgId, conditions, shape) : undefined]);
    // An empty page after a cursor may also mean the cursor is not an item of this list: only
    // then is it looked up on its own.
    if (cursorId !== undefined && fetched.length === 0 && (await on.query(cursorSql, [cursorId, orgId])).length === 0) return "unknown cursor";
    const hasMore = fetched.length > page.limit;
    if (hasMore) fetched.length = page.limit;
    if (walk === "newer") fetched.reverse();
    if (source.remembersCursors && source.plansKept) {
      remember(fetched[0]);
      remember(fetched.at(-1));
    }
    return { rows: fetched, hasMore, total };
  }

  return async function read(orgId: string, conditions: readonly Condition[], page: PageRequest): Promise<Page<Row>> {
    let result = await readOn(db, orgId, conditions, page);
    if (result === "unknown cursor" && primary) result = await readOn(primary, orgId, conditions, page);
    if (result === "unknown cursor") throw new InvalidCursorError(page.startingAfter !== undefined ? "starting_after" : "ending_before");
    return result;
  };
}

// ---- Prisma form, for the small lists ------------------------------------------------------

export interface Keyed {
  id: string;
  created_at: Date;
}

export type SortOrder = "asc" | "desc";

/** Rows strictly after (older than) or before (newer than) the cursor in list order. */
export type KeysetClause =
  | { created_at: { lte: Date }; OR: [{ created_at: { lt: Date } }, { created_at: Date; id: { lt: string } }] }
  | { created_at: { gte: Date }; OR: [{ created_at: { gt: Date } }, { created_at: Date; id: { gt: string } }] };

function clause(cursor: Keyed, direction: "older" | "newer"): KeysetClause {
  return direction === "older"
    ? { created_at: { lte: cursor.created_at }, OR: [{ created_at: { lt: cursor.created_at } }, { created_at: cursor.created_at, id: { lt: cursor.id } }] }
    : { created_at: { gte: cursor.created_at }, OR: [{ created_at: { gt: cursor.created_at } }, { created_at: cursor.created_at, id: { gt: cursor.id } }] };
}

export interface KeysetSource<Row> {
  /** The cursor item, if it is an item of this list in the caller's org (filters ignored). */
  cursor(id: string): Promise<Keyed | null>;
  rows(keyset: KeysetClause | undefined, order: SortOrder, take: number): Promise<Row[]>;
  count(): Promise<number>;
}

export async function paginate<Row>(page: PageRequest, source: KeysetSource<Row>): Promise<Page<Row>> {
  const cursorId = page.startingAfter ?? page.endingBefore;
  let keyset: KeysetClause | undefined;
  if (cursorId !== undefined) {
    const cursor = await source.cursor(cursorId);
    if (!cursor) throw new InvalidCursorError(page.startingAfter !== undefined ? "starting_after" : "ending_before");
    keyset = clause(cursor, page.endingBefore !== undefined ? "newer" : "older");
  }
  const backward = page.endingBefore !== undefined;
  // The page and the count run together (Prisma's promises are lazy: a count merely created
  // would not start until awaited), and Promise.all settles both when either fails.
  const [fetched, total] = await Promise.all([
    source.rows(keyset, backward ? "asc" : "desc", page.limit + 1),
    page.includeTotal ? source.count() : undefined,
  ]);
  const hasMore = fetched.length > page.limit;
  const rows = fetched.slice(0, page.limit);
  if (backward) rows.reverse();
  return { rows, hasMore, total };
}

/** `orderBy` for list order, or its reverse when walking backwards. */
export const listOrder = (order: SortOrder) => [{ created_at: order }, { id: order }];
