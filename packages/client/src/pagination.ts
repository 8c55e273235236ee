/** One page of any list: the shared envelope. */
export interface Page {
  data: Array<{ id: string }>;
  has_more: boolean;
}

/** Fetches one page of `path` with `query`; throws ApiError on failure. */
export type PageFetcher = (path: string, query: Record<string, unknown>, signal?: AbortSignal) => Promise<Page>;

/**
 * Walks a list forward (newest to oldest) from the start, or after `query.starting_after`:
 * each next page starts after the last item of the previous one, until `has_more` is false.
 */
export async function* paginateForward(
  fetchPage: PageFetcher,
  path: string,
  query: Record<string, unknown>,
  signal?: AbortSignal,
): AsyncGenerator<unknown, void, undefined> {
  const { ending_before: _ignored, ...base } = query;
  let cursor = typeof base.starting_after === "string" ? base.starting_after : undefined;
  for (;;) {
    const page = await fetchPage(path, withCursor(base, "starting_after", cursor), signal);
    yield* page.data;
    const last = page.data.at(-1);
    // An empty page cannot advance the cursor: stop rather than ask for the same page forever.
    if (!page.has_more || last === undefined) return;
    cursor = last.id;
  }
}

/**
 * Walks a list backward (towards newer items) from `query.ending_before`. Each page holds the
 * items right before the cursor, newest first; they are yielded nearest-to-the-cursor first, and
 * the next page ends before the page's newest item, until `has_more` is false.
 */
export async function* paginateBackward(
  fetchPage: PageFetcher,
  path: string,
  query: Record<string, unknown>,
  signal?: AbortSignal,
): AsyncGenerator<unknown, void, undefined> {
  const { starting_after: _ignored, ...base } = query;
  const start = base.ending_before;
  if (typeof start !== "string" || start.length === 0) {
    throw new TypeError("@audit-review/client: paginateBackward needs query.ending_before (an item id)");
  }
  let cursor: string = start;
  for (;;) {
    const page = await fetchPage(path, withCursor(base, "ending_before", cursor), signal);
    for (let i = page.data.length - 1; i >= 0; i--) yield page.data[i];
    const newest = page.data[0];
    if (!page.has_more || newest === undefined) return;
    cursor = newest.id;
  }
}

function withCursor(
  query: Record<string, unknown>,
  name: "starting_after" | "ending_before",
  cursor: string | undefined,
): Record<string, unknown> {
  const next = { ...query };
  delete next.starting_after;
  delete next.ending_before;
  if (cursor !== undefined) next[name] = cursor;
  return next;
}
