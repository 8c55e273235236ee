// Times and small text helpers: relative times in words, the exact time on hover.
const units: Array<[Intl.RelativeTimeFormatUnit, number]> = [
  ["year", 365 * 24 * 3600],
  ["month", 30 * 24 * 3600],
  ["day", 24 * 3600],
  ["hour", 3600],
  ["minute", 60],
  ["second", 1],
];
const relative = new Intl.RelativeTimeFormat("en", { numeric: "auto" });
const exact = new Intl.DateTimeFormat("en", { dateStyle: "medium", timeStyle: "medium" });

export function relativeTime(iso: string, now = Date.now()): string {
  const seconds = Math.round((new Date(iso).getTime() - now) / 1000);
  if (Math.abs(seconds) < 5) return "just now";
  for (const [unit, size] of units) {
    if (Math.abs(seconds) >= size || unit === "second") return relative.format(Math.round(seconds / size), unit);
  }
  return iso;
}

export const exactTime = (iso: string): string => `${exact.format(new Date(iso))} (${iso})`;

export const shortId = (id: string): string => `${id.slice(0, 8)}…${id.slice(-4)}`;

/** `2026-11-21T09:30` in local time, for <input type="datetime-local">. */
export function localInputValue(d: Date): string {
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export const pretty = (value: unknown): string => JSON.stringify(value, null, 2);

/**
 * A fresh Idempotency-Key per submission (a double click changes nothing twice). From
 * getRandomValues, which, unlike randomUUID, works on a page served over plain http too.
 */
export function idempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `portal-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}
