// The public contract's types. Internal (x-internal) operations live in "./internal".
export type * from "./generated/public.js";
