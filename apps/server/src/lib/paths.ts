import { fileURLToPath } from "node:url";

/** The contract, read at start-up; src/ and dist/ sit at the same depth below the repo root. */
export const SPEC_PATH = process.env.ARS_OPENAPI_PATH ?? fileURLToPath(new URL("../../../../openapi/openapi.yaml", import.meta.url));

/**
 * The rendered reference and the public bundle, built once by `npm run docs` (the api-types
 * package's generate task) into openapi/dist; found relative to this file, so the server finds
 * them wherever it is started from.
 */
export const DOCS_DIR = process.env.ARS_DOCS_DIR ?? fileURLToPath(new URL("../../../../openapi/dist/", import.meta.url));
