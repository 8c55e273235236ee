import { uuidv7 } from "uuidv7";

/** Time-ordered ids: list order by (created_at, id) matches creation order. */
export const newId = (): string => uuidv7();

const UUIDV7 = /^([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** The millisecond a UUIDv7 was made at; null for an id of another version. */
export function uuidv7Time(id: string): Date | null {
  const m = UUIDV7.exec(id);
  return m ? new Date(parseInt(m[1]! + m[2]!, 16)) : null;
}

/**
 * Where to look for a row by its UUIDv7 id in a table partitioned by day on created_at: a day
 * either side of the id's time (rows are stamped with the time their id carries, or within
 * seconds of it for rows written before that rule), so a lookup reads at most three partitions.
 * An id of another version could be anywhere: no bound.
 */
export function idTimeWindow(id: string): { from: Date; until: Date } | null {
  const at = uuidv7Time(id);
  return at && dayEitherSide(at);
}

/** From a day before `at` to a day after it: where a row stamped at or near `at` is. */
export function dayEitherSide(at: Date): { from: Date; until: Date } {
  return { from: new Date(at.getTime() - 86_400_000), until: new Date(at.getTime() + 86_400_000) };
}
/** The creation time a UUIDv7 carries: its first 48 bits, in unix milliseconds. */
export const uuidv7Millis = (id: string): number => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
