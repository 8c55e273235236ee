/** One page of a list: the shared envelope, typed by its item. */
export interface Page<T extends { id: string }> {
  data: T[];
  has_more: boolean;
}

/** The cursor of one page request: none for the first page forward, else exactly one of the two. */
export type Cursor = { starting_after?: string; ending_before?: never } | { ending_before: string; starting_after?: never };

/**
 * Fetches the page at `cursor`; throws ApiError on failure. The filters, page size and signal are
 * the caller's, closed over, so the walkers below deal in cursors only.
 */
export type PageFetcher<T extends { id: string }> = (cursor: Cursor) => Promise<Page<T>>;

/**
 * Walks a list forward (newest to oldest) from the start, or after `startingAfter`: each next
 * page starts after the last item of the previous one, until `has_more` is false.
 */
export async function* paginateForward<T extends { id: string }>(
  fetchPage: PageFetcher<T>,
  startingAfter: unknown,
): AsyncGenerator<T, void, undefined> {
  let cursor = typeof startingAfter === "string" ? startingAfter : undefined;
  for (;;) {
    const page = await fetchPage(cursor === undefined ? {} : { starting_after: cursor });
    yield* page.data;
    const last = page.data.at(-1);
    // An empty page cannot advance the cursor: stop rather than ask for the same page forever.
    if (!page.has_more || last === undefined) return;
    cursor = last.id;
  }
}

/**
 * Walks a list backward (towards newer items) from `endingBefore`. Each page holds the items
 * right before the cursor, newest first; they are yielded nearest-to-the-cursor first, and the
 * next page ends before the page's newest item, until `has_more` is false.
 */
export async function* paginateBackward<T extends { id: string }>(
  fetchPage: PageFetcher<T>,
  endingBefore: unknown,
): AsyncGenerator<T, void, undefined> {
  if (typeof endingBefore !== "string" || endingBefore.length === 0) {
    throw new TypeError("@audit-review/client: paginateBackward needs query.ending_before (an item id)");
  }
  let cursor: string = endingBefore;
  for (;;) {
    const page = await fetchPage({ ending_before: cursor });
    yield* page.data.toReversed();
    const newest = page.data[0];
    if (!page.has_more || newest === undefined) return;
    cursor = newest.id;
  }
}

/**
 * The query of one page request: the caller's filters and page size without any cursor of
 * theirs, then this page's cursor (last, as the walk set it).
 */
export function withCursor<Q extends { starting_after?: unknown; ending_before?: unknown }>(
  query: Q | undefined,
  cursor: Cursor,
): Partial<Omit<Q, "starting_after" | "ending_before">> & Cursor {
  if (query === undefined) return { ...cursor };
  const { starting_after: _after, ending_before: _before, ...filters } = query;
  return { ...filters, ...cursor };
}
