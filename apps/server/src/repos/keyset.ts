import { InvalidCursorError } from "../lib/errors.js";

/**
 * Keyset pagination shared by every list (Stripe cursor semantics, newest first). We build the
 * `where` ourselves instead of Prisma's `cursor:` option, which has dropped LIMIT and returned
 * wrong pages (prisma/orm#27094, #29176).
 */
export interface PageRequest {
  limit: number;
  startingAfter?: string | undefined;
  endingBefore?: string | undefined;
  includeTotal: boolean;
}

export interface Page<Row> {
  rows: Row[];
  hasMore: boolean;
  total: number | undefined;
}

export interface Keyed {
  id: string;
  created_at: Date;
}

export type SortOrder = "asc" | "desc";

/**
 * Rows strictly after (older than) or before (newer than) the cursor in list order. The
 * redundant bound on created_at alone lets PostgreSQL start the index scan at the cursor
 * instead of filtering from the newest row (deep pages cost what first pages cost).
 */
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
