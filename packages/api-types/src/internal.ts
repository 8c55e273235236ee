// The full contract's types, internal ingestion and admin operations included: for the server.
export type * from "./generated/full.js";
