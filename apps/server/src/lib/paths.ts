import { fileURLToPath } from "node:url";

/** The contract, read at start-up; src/ and dist/ sit at the same depth below the repo root. */
export const SPEC_PATH = process.env.ARS_OPENAPI_PATH ?? fileURLToPath(new URL("../../../../openapi/openapi.yaml", import.meta.url));
