import { expect } from "vitest";

/** The cursor part of a list query; filters are closed over by the caller's `PageFetcher`. */
export interface PageQuery {
  limit?: number;
  starting_after?: string;
  ending_before?: string;
}

export interface PageOf<T extends { id: string }> {
  data: T[];
  has_more: boolean;
  total_count?: number;
}

/** One page of a list with the caller's filters; must throw (or fail) on anything but 200. */
export type PageFetcher<T extends { id: string }> = (query: PageQuery) => Promise<PageOf<T>>;

export const ids = (items: ReadonlyArray<{ id: string }>): string[] => items.map((i) => i.id);

/** List order (docs/api-decisions.md#lists): created_at DESC, then id DESC. */
export function newestFirst<T extends { id: string; created_at: string }>(items: readonly T[]): T[] {
  return [...items].sort((a, b) => (a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1));
}

/**
 * Follows `starting_after` from the first page to the end. `has_more` must be true on every page
 * but the last and false on the last; no page may be empty except a first page of an empty list.
 */
export async function walkForward<T extends { id: string }>(fetchPage: PageFetcher<T>, limit: number): Promise<T[][]> {
  const pages: T[][] = [];
  let cursor: string | undefined;
  for (let guard = 0; guard < 1000; guard++) {
    const page = await fetchPage({ limit, ...(cursor && { starting_after: cursor }) });
    expect(page.data.length, "a page never holds more than limit items").toBeLessThanOrEqual(limit);
    pages.push(page.data);
    if (!page.has_more) return pages;
    expect(page.data.length, "a page with has_more=true is full").toBe(limit);
    cursor = page.data[page.data.length - 1]!.id;
  }
  throw new Error("walkForward: more than 1000 pages");
}

/**
 * Follows `ending_before` from `fromId` towards the newest item. Each page is newest first;
 * `has_more` is true until the newest item has been returned.
 */
export async function walkBackward<T extends { id: string }>(fetchPage: PageFetcher<T>, limit: number, fromId: string): Promise<T[][]> {
  const pages: T[][] = [];
  let cursor = fromId;
  for (let guard = 0; guard < 1000; guard++) {
    const page = await fetchPage({ limit, ending_before: cursor });
    expect(page.data.length).toBeLessThanOrEqual(limit);
    pages.unshift(page.data);
    if (!page.has_more) return pages;
    expect(page.data.length, "a page with has_more=true is full").toBe(limit);
    cursor = page.data[0]!.id;
  }
  throw new Error("walkBackward: more than 1000 pages");
}

/**
 * The pagination contract of one list, for a list known to hold exactly `expected` (in list
 * order) under the fetcher's filters: for each limit, the forward walk returns every item once
 * in order; the backward walk from the oldest item returns the same items (plus that oldest one);
 * both ends answer empty pages with has_more=false.
 */
export async function expectWalksAgree<T extends { id: string }>(
  fetchPage: PageFetcher<T>,
  expected: readonly string[],
  limits: readonly number[] = [1, 2, 3, expected.length || 1, 100],
): Promise<void> {
  for (const limit of limits) {
    const forward = (await walkForward(fetchPage, limit)).flat();
    expect(ids(forward), `forward walk, limit ${limit}`).toEqual(expected);
    if (expected.length === 0) continue;
    const oldest = expected[expected.length - 1]!;
    const backward = (await walkBackward(fetchPage, limit, oldest)).flat();
    expect([...ids(backward), oldest], `backward walk, limit ${limit}`).toEqual(expected);
  }
  if (expected.length === 0) return;
  const beyondOldest = await fetchPage({ limit: 100, starting_after: expected[expected.length - 1]! });
  expect(beyondOldest).toMatchObject({ data: [], has_more: false });
  const beyondNewest = await fetchPage({ limit: 100, ending_before: expected[0]! });
  expect(beyondNewest).toMatchObject({ data: [], has_more: false });
}

const SOME_UUID = "0193a5b2-7c4e-7a10-9d2f-3b1c2d4e5f61";

/**
 * Query strings every list must refuse with 400 VALIDATION_ERROR, and the parameter the problem
 * must name (docs/api-decisions.md#lists: limit, cursors, boolean strings, unknown parameters).
 */
export const LIST_BAD_QUERIES: ReadonlyArray<readonly [query: string, param: string]> = [
  ["limit=0", "limit"],
  ["limit=101", "limit"],
  ["limit=abc", "limit"],
  ["limit=1.5", "limit"],
  ["limit=-1", "limit"],
  ["limit=", "limit"],
  ["limit=1&limit=2", "limit"],
  ["starting_after=not-a-uuid", "starting_after"],
  ["ending_before=42", "ending_before"],
  [`starting_after=${SOME_UUID}&ending_before=${SOME_UUID}`, "ending_before"],
  ["include_total=yes", "include_total"],
  ["include_total=1", "include_total"],
  ["include_total=TRUE", "include_total"],
  ["include_total=true&include_total=false", "include_total"],
  ["unknown_param=1", "unknown_param"],
  ["Limit=5", "Limit"],
];
