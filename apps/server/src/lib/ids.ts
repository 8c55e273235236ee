import { uuidv7 } from "uuidv7";

/** Time-ordered ids: list order by (created_at, id) matches creation order. */
export const newId = (): string => uuidv7();
