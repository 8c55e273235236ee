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
  const entries: Array<{ re: RegExp; literal: string | null; slashed: string; op: OperationInfo }> = [];
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
        literal: path.includes("{") ? null : path,
        slashed: `${path}/`,
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
  // Every request asks, so the entries are grouped by method once, and a path without
  // parameters is compared as a string (with or without its trailing slash, as the pattern
  // allows) instead of by regex. The first match in contract order still wins.
  const byMethod = new Map<string, typeof entries>();
  for (const e of entries) byMethod.set(e.op.method, [...(byMethod.get(e.op.method) ?? []), e]);
  return {
    all: entries.map((e) => e.op),
    match(method, path) {
      for (const e of byMethod.get(method) ?? []) {
        if (e.literal === null ? e.re.test(path) : path === e.literal || path === e.slashed) return e.op;
      }
      return undefined;
    },
  };
}
