import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LISTENER_APPLICATION_NAME } from "../../src/db/notify.js";
import { createTestDatabase, onPostgres, type TestDatabase } from "../harness/db.js";

let t: TestDatabase;

beforeAll(async () => {
  t = await createTestDatabase();
});

afterAll(async () => {
  await t?.close();
});

/** Resolves with the first `count` payloads, or rejects after `ms`. */
function collect(count: number, ms = 5_000): { handler: (p: string) => void; done: Promise<string[]>; seen: string[] } {
  const seen: string[] = [];
  let resolve!: (v: string[]) => void;
  const done = new Promise<string[]>((res, rej) => {
    resolve = res;
    setTimeout(() => rej(new Error(`timed out with ${JSON.stringify(seen)}`)), ms).unref();
  });
  // Collectors that are expected to stay empty are never awaited: their timeout is no error.
  done.catch(() => undefined);
  return {
    seen,
    done,
    handler: (p) => {
      seen.push(p);
      if (seen.length === count) resolve([...seen]);
    },
  };
}

describe(`listen/notify (${onPostgres ? "PostgreSQL" : "PGlite"})`, () => {
  it("delivers payloads to every handler of the channel, and only that channel", async () => {
    const a = collect(2);
    const b = collect(2);
    const other = collect(1);
    const offA = await t.db.listen("ars_test_wake", a.handler);
    const offB = await t.db.listen("ars_test_wake", b.handler);
    const offOther = await t.db.listen("ars_test_other", other.handler);
    try {
      await t.db.notify("ars_test_wake", "first");
      await t.db.notify("ars_test_wake");
      expect(await a.done).toEqual(["first", ""]);
      expect(await b.done).toEqual(["first", ""]);
      // Notifications arrive in commit order: had the other channel's handler been given either
      // payload, it would hold it before this one.
      await t.db.notify("ars_test_other", "barrier");
      expect(await other.done).toEqual(["barrier"]);
    } finally {
      await offA();
      await offB();
      await offOther();
    }
  });

  it("stops delivering after unsubscribe, while other handlers keep theirs", async () => {
    const stays = collect(3);
    const leaves = collect(2);
    const offStays = await t.db.listen("ars_test_unsub", stays.handler);
    const offLeaves = await t.db.listen("ars_test_unsub", leaves.handler);
    try {
      await t.db.notify("ars_test_unsub", "1");
      await expect.poll(() => leaves.seen).toEqual(["1"]);
      await offLeaves();
      await offLeaves(); // idempotent
      await t.db.notify("ars_test_unsub", "2");
      // "3" reaching the handler that stays means "2" has been handed to every handler there was.
      await t.db.notify("ars_test_unsub", "3");
      expect(await stays.done).toEqual(["1", "2", "3"]);
      expect(leaves.seen).toEqual(["1"]);
    } finally {
      await offStays();
    }
  });

  it("does not deliver notifications of a rolled-back transaction", async () => {
    const got = collect(1);
    const off = await t.db.listen("ars_test_tx", got.handler);
    try {
      await t.db
        .transaction(async (tx) => {
          await tx.query("SELECT pg_notify('ars_test_tx', 'rolled back')");
          throw new Error("abort");
        })
        .catch(() => undefined);
      await t.db.transaction(async (tx) => {
        await tx.query("SELECT pg_notify('ars_test_tx', 'committed')");
      });
      expect(await got.done).toEqual(["committed"]);
    } finally {
      await off();
    }
  });

  it("rejects channel names that would behave differently per engine", async () => {
    await expect(t.db.listen("Mixed_Case", () => undefined)).rejects.toThrow(/channel/);
    await expect(t.db.notify("has space")).rejects.toThrow(/channel/);
  });

  it.skipIf(!onPostgres)("re-subscribes after the listening connection is killed (PostgreSQL only)", async () => {
    const got = collect(2, 15_000);
    const off = await t.db.listen("ars_test_reconnect", got.handler);
    try {
      await t.db.notify("ars_test_reconnect", "before");
      await expect.poll(() => got.seen).toEqual(["before"]);

      const killed = await t.db.query<{ ok: boolean }>(
        `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
          WHERE application_name = $1 AND datname = current_database()`,
        [LISTENER_APPLICATION_NAME],
      );
      expect(killed).toEqual([{ ok: true }]);

      // Notify until the new connection has subscribed again.
      await expect
        .poll(
          async () => {
            await t.db.notify("ars_test_reconnect", "after");
            return got.seen.includes("after");
          },
          { timeout: 10_000, interval: 200 },
        )
        .toBe(true);
      const listeners = await t.db.query(
        "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()",
        [LISTENER_APPLICATION_NAME],
      );
      expect(listeners).toEqual([{ n: 1 }]);
    } finally {
      await off();
    }
  });
});
