// The behaviour every keyset list shares (docs/api-decisions.md#lists: limit, cursors, include_total, tenancy),
// described once; each list's test file instantiates it with how to create its items and keeps
// only the tests of its own filters and fields.
import { describe, expect, it } from "vitest";
import { problemOf, rawProblem, unknownId } from "./factories.js";
import { expectWalksAgree, ids, LIST_BAD_QUERIES, type PageFetcher, type PageOf } from "./pagination.js";
import type { Api, TestServer } from "./server.js";

/** The query every list accepts; each list's own query type is a superset. */
export interface KeysetQuery {
  limit?: number;
  starting_after?: string;
  ending_before?: string;
  include_total?: "true" | "false";
}

export interface ListResult<T extends { id: string }> {
  data?: PageOf<T> & { object: "list" };
  error?: unknown;
  response: Response;
}

export interface KeysetListSpec<T extends { id: string }> {
  /** the items' name in test titles, plural ("question sets") */
  items: string;
  path: string;
  server: TestServer;
  list(api: Api, query: KeysetQuery): Promise<ListResult<T>>;
  /** `n` new items of the org, made one after another; returned in list order (newest first). */
  createMany(api: Api, n: number): Promise<T[]>;
  /** ids of items of other lists in the same org: never a cursor of this one */
  idsOfOtherLists(api: Api): Promise<string[]>;
  /** query strings refused with 400 naming the parameter, beyond those of every list */
  badQueries: ReadonlyArray<readonly [query: string, param: string]>;
}

/** Runs `make` `n` times one after another (so creation order is certain); results in creation order. */
export async function oneAfterAnother<T>(n: number, make: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < n; i++) out.push(await make(i));
  return out;
}

/** A page fetcher over one list query (filters closed over by the caller); anything but 200 fails the test. */
export function pagerOf<T extends { id: string }>(fetchList: (page: KeysetQuery) => Promise<ListResult<T>>): PageFetcher<T> {
  return async (page) => {
    const { data, error, response } = await fetchList(page);
    if (!data) throw new Error(`list answered ${response.status}: ${JSON.stringify(error)}`);
    expect(response.status).toBe(200);
    return data;
  };
}

export function describeKeysetList<T extends { id: string }>(spec: KeysetListSpec<T>): void {
  const { server, items, list } = spec;

  describe(`GET ${spec.path}: keyset list behaviour`, () => {
    it(`when limit is omitted, then 10 ${items} are returned newest first with has_more and no total_count`, async () => {
      const { api } = await server.newOrg();
      const all = await spec.createMany(api, 11);

      const { data } = await list(api, {});

      expect(ids(data!.data)).toEqual(ids(all.slice(0, 10)));
      expect(data!.has_more).toBe(true);
      expect(data).not.toHaveProperty("total_count");
    });

    it(`when walking forward and backward with any limit, then both walks return every one of the ${items} once, in order`, async () => {
      const { api } = await server.newOrg();
      const all = await spec.createMany(api, 7);

      await expectWalksAgree(pagerOf((page) => list(api, page)), ids(all), [1, 2, 3, 6, 7, 100]);
    });

    it("when limit is 1 or 100, the bounds, then pages hold at most that many", async () => {
      const { api } = await server.newOrg();
      const all = await spec.createMany(api, 3);

      const one = await list(api, { limit: 1 });
      const hundred = await list(api, { limit: 100 });

      expect(one.data).toMatchObject({ object: "list", has_more: true, data: [{ id: all[0]!.id }] });
      expect(hundred.data).toMatchObject({ has_more: false });
      expect(ids(hundred.data!.data)).toEqual(ids(all));
    });

    it(`when include_total is true, then total_count counts every one of the ${items}, ignoring cursor and limit; false or omitted leave it out`, async () => {
      const { api } = await server.newOrg();
      const all = await spec.createMany(api, 4);

      const first = await list(api, { include_total: "true", limit: 2 });
      const later = await list(api, { include_total: "true", limit: 1, starting_after: all[1]!.id });
      const back = await list(api, { include_total: "true", ending_before: all[1]!.id });
      const off = await list(api, { include_total: "false" });
      const omitted = await list(api, {});

      expect(first.data).toMatchObject({ total_count: 4, has_more: true });
      expect(first.data!.data).toHaveLength(2);
      expect(later.data).toMatchObject({ total_count: 4, has_more: true, data: [{ id: all[2]!.id }] });
      expect(back.data).toMatchObject({ total_count: 4, has_more: false, data: [{ id: all[0]!.id }] });
      expect(off.data).not.toHaveProperty("total_count");
      expect(ids(off.data!.data)).toEqual(ids(all));
      expect(omitted.data).not.toHaveProperty("total_count");
    });

    it(`when an org has no ${items}, then the list is empty with has_more false and total_count 0`, async () => {
      const { api } = await server.newOrg();

      const { data } = await list(api, { include_total: "true" });

      expect(data).toEqual({ object: "list", data: [], has_more: false, total_count: 0 });
    });

    it(`when another org has ${items}, then they are neither listed nor counted`, async () => {
      const { api } = await server.newOrg();
      const other = await server.newOrg();
      await spec.createMany(other.api, 2);
      const mine = await spec.createMany(api, 1);

      const { data } = await list(api, { include_total: "true" });

      expect(data).toMatchObject({ total_count: 1, has_more: false });
      expect(ids(data!.data)).toEqual(ids(mine));
    });

    it.each([...LIST_BAD_QUERIES, ...spec.badQueries])("when the query is %s, then 400 names %s", async (query, param) => {
      const { token } = await server.newOrg();
      await rawProblem(await server.raw(`${spec.path}?${query}`, { token }), { status: 400, code: "VALIDATION_ERROR", name: param, location: "query" });
    });

    it("when a cursor is unknown, of another org or of another list, then 400 INVALID_CURSOR names it", async () => {
      const { api } = await server.newOrg();
      const other = await server.newOrg();
      await spec.createMany(api, 1);
      const [foreign] = await spec.createMany(other.api, 1);
      const elsewhere = await spec.idsOfOtherLists(api);

      for (const id of [unknownId(), foreign!.id, ...elsewhere]) {
        problemOf(await list(api, { starting_after: id }), { status: 400, code: "INVALID_CURSOR", name: "starting_after" });
        problemOf(await list(api, { ending_before: id }), { status: 400, code: "INVALID_CURSOR", name: "ending_before" });
      }
    });
  });
}
