// Text-format parsers shared by both engines for raw `query` results, so the same SQL yields the
// same JavaScript values on PostgreSQL (node-postgres) and PGlite. Without them the two differ:
// count(*) is a string on one and a number on the other, DATE is local midnight on one and UTC
// midnight on the other, BYTEA is a Buffer on one and a Uint8Array on the other.

export const OID = {
  BYTEA: 17,
  INT8: 20,
  DATE: 1082,
  NUMERIC: 1700,
} as const;

/** int8 → number while it is exact, bigint beyond 2^53 (never a silently rounded number). */
export function parseInt8(text: string): number | bigint {
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : BigInt(text);
}

/** date → Date at UTC midnight, which is how Prisma reads `@db.Date` too. */
export function parseDate(text: string): Date {
  return new Date(`${text}T00:00:00.000Z`);
}

/** bytea in PostgreSQL's default hex output (`\x0102…`) → Buffer. */
export function parseBytea(text: string): Buffer {
  return Buffer.from(text.slice(2), "hex");
}

/** numeric stays a string: a float would lose digits. */
export function parseNumeric(text: string): string {
  return text;
}

export type TextParser = (text: string) => unknown;

/** Parsers that override each engine's defaults; bytea only matters on PGlite (pg already gives a Buffer). */
export const sharedParsers: Readonly<Record<number, TextParser>> = {
  [OID.BYTEA]: parseBytea,
  [OID.INT8]: parseInt8,
  [OID.DATE]: parseDate,
  [OID.NUMERIC]: parseNumeric,
};
