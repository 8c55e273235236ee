import { uuidv7 } from "uuidv7";

/** Time-ordered ids: list order by (created_at, id) matches creation order. */
export const newId = (): string => uuidv7();

/** The creation time a UUIDv7 carries: its first 48 bits, in unix milliseconds. */
export const uuidv7Millis = (id: string): number => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
