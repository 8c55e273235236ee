// The housekeeping metrics move when the loop runs: a run that did the work counts a success, the
// rows it removed per table, its duration and its time; a run that fails counts a failure (what
// the ArsHousekeepingFailing and ArsHousekeepingStale alerts read). Real database, real loop.
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/client.js";
import { createHousekeeper } from "../../src/housekeeping/housekeeper.js";
import { createLogger } from "../../src/lib/logger.js";
import { DAY_MS, retention } from "../../src/domain/retention.js";
import { housekeepingMetrics } from "../../src/metrics/housekeeping.js";
import { createTestDatabase, type TestDatabase } from "../harness/db.js";
import { fixedClock } from "../harness/partitions.js";

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.close();
});

const logger = createLogger({ level: "silent" });

async function value(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`${name} is not registered`);
  const { values } = await metric.get();
  const hit = values.find((v) => Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l));
  return hit?.value ?? Number.NaN;
}

describe("housekeeping metrics", () => {
  it("When a run does the work, Then a success, the rows removed per table, the duration and the time of the success are counted", async () => {
    const registry = new Registry();
    const observe = housekeepingMetrics(registry);
    expect(await value(registry, "ars_housekeeping_runs_total", { outcome: "failure" })).toBe(0);
    expect(await value(registry, "ars_housekeeping_last_success_timestamp_seconds")).toBe(0);
    // two rate-limit windows that ended long ago: the run removes them
    await t.db.query(
      `INSERT INTO rate_limit_windows (key, window_start, hits) VALUES ('hk-metrics-a', now() - interval '1 hour', 3), ('hk-metrics-b', now() - interval '2 hours', 1)`,
    );
    const before = Date.now() / 1000;
    const hk = createHousekeeper({
      db: t.db, retention: retention(30), clock: fixedClock(new Date()), logger, intervalMs: DAY_MS,
      onRun: observe.run, onFailure: observe.failed,
    });
    await hk.start();
    await hk.stop();
    expect(await value(registry, "ars_housekeeping_runs_total", { outcome: "success" })).toBe(1);
    expect(await value(registry, "ars_housekeeping_runs_total", { outcome: "failure" })).toBe(0);
    expect(await value(registry, "ars_housekeeping_rows_removed_total", { table: "rate_limit_windows" })).toBeGreaterThanOrEqual(2);
    expect(await value(registry, "ars_housekeeping_rows_removed_total", { table: "events" })).toBe(0);
    expect(await value(registry, "ars_housekeeping_last_success_timestamp_seconds")).toBeGreaterThanOrEqual(Math.floor(before));
    const text = await registry.getSingleMetricAsString("ars_housekeeping_duration_seconds");
    expect(text).toMatch(/ars_housekeeping_duration_seconds_count 1\b/);
  });

  it("When a run fails (its database is gone), Then a failure is counted and no success", async () => {
    const registry = new Registry();
    const observe = housekeepingMetrics(registry);
    const db = await openDatabase({ inMemory: true });
    await db.close();
    const hk = createHousekeeper({
      db, retention: retention(30), clock: fixedClock(new Date()), logger, intervalMs: DAY_MS,
      onRun: observe.run, onFailure: observe.failed,
    });
    await expect(hk.start()).rejects.toThrow();
    await hk.stop();
    expect(await value(registry, "ars_housekeeping_runs_total", { outcome: "failure" })).toBe(1);
    expect(await value(registry, "ars_housekeeping_runs_total", { outcome: "success" })).toBe(0);
    expect(await value(registry, "ars_housekeeping_last_success_timestamp_seconds")).toBe(0);
  });
});
