import { errorField } from "../lib/narrow.js";

/** A mistake in a command's arguments: shown as it is, one line, exit code 1. */
export class UsageError extends Error {
  override name = "UsageError";
}

/**
 * The one line a command prints for a failure. Database driver errors carry multi-line query
 * dumps (and Prisma's an "invocation" excerpt of our code): the user gets their code only.
 */
export function oneLine(err: unknown): string {
  const name = err instanceof Error ? `${err.name} ${err.constructor.name}` : "";
  if (/Prisma|DriverAdapter/.test(name)) {
    const code = errorField(err, "code");
    return `database error${code ? ` ${code}` : ""}`;
  }
  const message = err instanceof Error ? err.message : String(err);
  return message.split("\n").map((l) => l.trim()).find(Boolean) ?? "unknown error";
}
