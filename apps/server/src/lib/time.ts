/** Every timestamp of the API: RFC 3339 UTC with milliseconds. */
export const iso = (d: Date): string => d.toISOString();
export const isoOrNull = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);
