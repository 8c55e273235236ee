// Reads a process's metrics the way Prometheus does: GET /metrics on its metrics listener, the
// text format parsed into `name{label="value",…}` → value (labels sorted by name).
import { expect } from "vitest";

export type Sample = Map<string, number>;

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export const seriesKey = (name: string, labels: Record<string, string> = {}) => {
  const parts = Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}="${v}"`);
  return parts.length ? `${name}{${parts.join(",")}}` : name;
};

export function parseMetrics(text: string): Sample {
  const out: Sample = new Map();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = LINE.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels = Object.fromEntries([...(m[2] ?? "").matchAll(LABEL)].map((l) => [l[1]!, l[2]!]));
    out.set(seriesKey(m[1]!, labels), Number(m[3]));
  }
  return out;
}

export async function scrape(url: string): Promise<Sample> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseMetrics(await res.text());
}

/** A series' value in a scrape (0 when absent: a counter or histogram not yet touched). */
export const valueOf = (s: Sample, name: string, labels: Record<string, string> = {}) => s.get(seriesKey(name, labels)) ?? 0;

/** How much each named series moved between two scrapes. */
export const moved = (before: Sample, after: Sample, name: string, labels: Record<string, string> = {}) =>
  valueOf(after, name, labels) - valueOf(before, name, labels);
