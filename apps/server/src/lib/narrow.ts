/**
 * Run-time narrowing for values whose shape the compiler cannot know: parsed JSON or YAML, errors
 * thrown by libraries, objects other middleware decorated. Checking beats asserting: a value of
 * the wrong shape becomes "absent" instead of a crash three calls later.
 */
export type JsonObject = Record<string, unknown>;

export const isRecord = (value: unknown): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The object itself, or an empty one when `value` is not an object. */
export const recordOf = (value: unknown): JsonObject => (isRecord(value) ? value : {});

/** The array itself, or an empty one when `value` is not an array. */
export const arrayOf = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

export const stringOf = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

/** A string-valued property of an error (Node's `code`, a driver's `code`), when present. */
export function errorField(err: unknown, field: string): string | undefined {
  return isRecord(err) ? stringOf(err[field]) : undefined;
}

/** An object's own enumerable keys, typed as keys of its type (`Object.keys` says `string[]`). */
export function keysOf<T extends object>(value: T): Array<keyof T & string> {
  return Object.keys(value).filter((key): key is keyof T & string => key in value);
}
