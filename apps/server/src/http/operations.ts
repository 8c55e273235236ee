import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { isRecord, recordOf } from "../lib/narrow.js";

/**
 * The contract's operations, read once at start-up, so that authorization comes from the
 * contract itself (`x-required-scopes`) instead of a second list kept by hand.
 */
export interface OperationInfo {
  operationId: string;
  method: string;
  path: string;
  requiredScopes: readonly string[];
  internal: boolean;
  /** `security: []`: no token (health, docs, the spec itself). */
  public: boolean;
}

const METHODS = ["get", "post", "put", "patch", "delete"] as const;

export interface OperationIndex {
  all: OperationInfo[];
  match(method: string, path: string): OperationInfo | undefined;
}

export function loadOperations(specPath: string): OperationIndex {
  const spec = recordOf(parse(readFileSync(specPath, "utf8")));
  const entries: Array<{ re: RegExp; op: OperationInfo }> = [];
  for (const [path, item] of Object.entries(recordOf(spec.paths))) {
    for (const method of METHODS) {
      const raw = recordOf(item)[method];
      if (!isRecord(raw)) continue;
      const scopes = raw["x-required-scopes"];
      if (typeof raw.operationId !== "string" || !Array.isArray(scopes) || !scopes.every((s) => typeof s === "string")) {
        throw new Error(`${method} ${path} lacks operationId or x-required-scopes`);
      }
      const re = new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}/?$`);
      entries.push({
        re,
        op: {
          operationId: raw.operationId,
          method: method.toUpperCase(),
          path,
          requiredScopes: scopes,
          internal: raw["x-internal"] === true,
          public: Array.isArray(raw.security) && raw.security.length === 0,
        },
      });
    }
  }
  return {
    all: entries.map((e) => e.op),
    match(method, path) {
      return entries.find((e) => e.op.method === method && e.re.test(path))?.op;
    },
  };
}
