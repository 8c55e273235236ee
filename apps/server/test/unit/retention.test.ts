// The retention rule (domain/retention.ts): its window, its keep rule, and its settings (config.ts).
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { idTimeWindow, newId, uuidv7Time } from "../../src/lib/ids.js";
import { DAY_MS, retention, retentionDrops, type RetainedPartition } from "../../src/domain/retention.js";

const at = (iso: string) => new Date(iso);

describe("retention(days)", () => {
  const r = retention(30);

  it("removes a row once all of its UTC day is older than the window", () => {
    expect(r.removalTime(at("2026-01-01T00:00:00.000Z"))).toEqual(at("2026-02-01T00:00:00.000Z"));
    expect(r.removalTime(at("2026-01-01T23:59:59.999Z"))).toEqual(at("2026-02-01T00:00:00.000Z"));
    // on 2026-02-01 at noon, 2026-01-01 is the last day past the window; 2026-01-02 is kept
    expect(r.firstKeptDay(at("2026-02-01T12:00:00.000Z"))).toEqual(at("2026-01-02T00:00:00.000Z"));
    expect(r.firstKeptDay(at("2026-02-01T00:00:00.000Z"))).toEqual(at("2026-01-02T00:00:00.000Z"));
  });

  it("lets a retry revive only rows with at least 24 hours left", () => {
    const now = at("2026-02-01T12:00:00.000Z");
    // 2026-01-02 goes at 2026-02-02T00:00 (12 h away): refused; 2026-01-03 (36 h away): allowed
    expect(r.earliestRevivable(now)).toEqual(at("2026-01-03T00:00:00.000Z"));
    expect(r.removalTime(at("2026-01-03T00:00:00.000Z")).getTime() - now.getTime()).toBeGreaterThanOrEqual(DAY_MS);
    expect(r.removalTime(at("2026-01-02T23:59:59.999Z")).getTime() - now.getTime()).toBeLessThan(DAY_MS);
    // exactly at a day boundary the boundary day itself is still revivable
    expect(r.earliestRevivable(at("2026-02-01T00:00:00.000Z"))).toEqual(at("2026-01-02T00:00:00.000Z"));
  });

  it("refuses a window under one day", () => {
    expect(() => retention(0)).toThrow(RangeError);
    expect(() => retention(1.5)).toThrow(RangeError);
  });
});

describe("retentionDrops (the keep rule)", () => {
  const r = retention(3);
  const now = at("2026-02-10T12:00:00.000Z"); // days before 2026-02-07 are past the window
  const day = (table: RetainedPartition["table"], ymd: string) => {
    const from = at(`${ymd}T00:00:00.000Z`);
    return { table, name: `${table}_${ymd}`, from, until: new Date(from.getTime() + DAY_MS) };
  };
  const history = (table: RetainedPartition["table"]) => ({ table, name: `${table}_history`, from: null, until: at("2026-02-01T00:00:00.000Z") });
  const tables = ["events", "webhook_deliveries", "webhook_delivery_attempts"] as const;
  const parts = [...tables.map(history), ...["2026-02-01", "2026-02-03", "2026-02-05", "2026-02-07", "2026-02-09"].flatMap((d) => tables.map((t) => day(t, d)))];
  const names = (ps: readonly { name: string }[]) => ps.map((p) => p.name).sort();

  it("when no expired day holds a live delivery, then every partition wholly before the window goes, attempts first, and none inside it", () => {
    const { drop, keep } = retentionDrops(r, now, parts, () => false);
    expect(keep).toEqual([]);
    expect(names(drop)).toEqual(names(parts.filter((p) => p.until.getTime() <= at("2026-02-07T00:00:00.000Z").getTime())));
    expect(drop.map((p) => p.table)).toEqual([...drop.map((p) => p.table)].sort((a, b) => tables.indexOf(b) - tables.indexOf(a)));
  });

  it("when an expired day holds a delivery that is not final, then its deliveries and events stay, and so do the attempts of that day and every later one", () => {
    const { drop, keep } = retentionDrops(r, now, parts, (p) => p.name === "webhook_deliveries_2026-02-03");
    expect(names(keep)).toEqual(["events_2026-02-03", "webhook_deliveries_2026-02-03", "webhook_delivery_attempts_2026-02-03", "webhook_delivery_attempts_2026-02-05"]);
    expect(names(drop)).toContain("webhook_delivery_attempts_2026-02-01");
    expect(names(drop)).toContain("webhook_deliveries_2026-02-05");
    expect(names(drop)).toContain("events_2026-02-01");
  });

  it("when the history holds a live delivery, then it stays whole, and every expired day's attempts with it", () => {
    const { keep } = retentionDrops(r, now, parts, (p) => p.name === "webhook_deliveries_history");
    expect(names(keep)).toEqual(
      names([...tables.map(history), ...["2026-02-01", "2026-02-03", "2026-02-05"].map((d) => day("webhook_delivery_attempts", d))]),
    );
  });
});

describe("ids name their day partition", () => {
  it("reads the time of a UUIDv7 and bounds a lookup a day either side; other versions are unbounded", () => {
    const before = Date.now();
    const id = newId();
    const t = uuidv7Time(id)!.getTime();
    expect(t).toBeGreaterThanOrEqual(before);
    expect(t).toBeLessThanOrEqual(Date.now());
    expect(idTimeWindow(id)).toEqual({ from: new Date(t - DAY_MS), until: new Date(t + DAY_MS) });
    expect(uuidv7Time("3b241101-e2bb-4255-8caf-4136c566a962")).toBeNull();
    expect(idTimeWindow("3b241101-e2bb-4255-8caf-4136c566a962")).toBeNull();
  });
});

describe("ARS_RETENTION_DAYS and ARS_HOUSEKEEPING_INTERVAL_MS", () => {
  it("default to 30 days and an hour", () => {
    expect(loadConfig({})).toMatchObject({ retentionDays: 30, housekeepingIntervalMs: 3_600_000 });
    expect(loadConfig({ ARS_RETENTION_DAYS: "7", ARS_HOUSEKEEPING_INTERVAL_MS: "600000" })).toMatchObject({ retentionDays: 7, housekeepingIntervalMs: 600_000 });
  });

  it.each([
    [{ ARS_RETENTION_DAYS: "0" }, /ARS_RETENTION_DAYS must be an integer >= 1/],
    [{ ARS_RETENTION_DAYS: "thirty" }, /ARS_RETENTION_DAYS/],
    [{ ARS_RETENTION_DAYS: "3651" }, /ARS_RETENTION_DAYS must be an integer from 1 to 3650/],
    [{ ARS_HOUSEKEEPING_INTERVAL_MS: "1000" }, /ARS_HOUSEKEEPING_INTERVAL_MS must be an integer >= 60000/],
    [{ ARS_HOUSEKEEPING_INTERVAL_MS: "90000000" }, /ARS_HOUSEKEEPING_INTERVAL_MS must be an integer from 60000 to 86400000/],
  ])("refuses %j at start-up", (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });
});
