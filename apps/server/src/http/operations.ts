import { readFileSync } from "node:fs";
import { parse } from "yaml";

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

interface RawOperation {
  operationId?: string;
  "x-required-scopes"?: string[];
  "x-internal"?: boolean;
  security?: unknown[];
}

const METHODS = ["get", "post", "put", "patch", "delete"] as const;

export interface OperationIndex {
  all: OperationInfo[];
  match(method: string, path: string): OperationInfo | undefined;
}

export function loadOperations(specPath: string): OperationIndex {
  const spec = parse(readFileSync(specPath, "utf8")) as { paths: Record<string, Record<string, RawOperation>> };
  const entries: Array<{ re: RegExp; op: OperationInfo }> = [];
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const method of METHODS) {
      const raw = item[method];
      if (!raw) continue;
      if (!raw.operationId || !raw["x-required-scopes"]) throw new Error(`${method} ${path} lacks operationId or x-required-scopes`);
      const re = new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}/?$`);
      entries.push({
        re,
        op: {
          operationId: raw.operationId,
          method: method.toUpperCase(),
          path,
          requiredScopes: raw["x-required-scopes"],
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
