// Reading EXPLAIN (ANALYZE, FORMAT JSON) output in the query-plan tests: the plan's nodes flattened,
// and how many rows the scans actually read.

export interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Actual Rows"?: number;
  "Actual Loops"?: number;
  "Rows Removed by Filter"?: number;
  "Rows Removed by Index Recheck"?: number;
  /** set on the root of a CTE's or subquery's plan: `CTE name`, `InitPlan 1 (returns $0)` */
  "Subplan Name"?: string;
  Plans?: PlanNode[];
}

/** Every node of a plan, the root first. */
export const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];

/** Rows the chosen scans read: returned or filtered out, over all their loops. */
export function rowsRead(plan: PlanNode[], scan: (n: PlanNode) => boolean): number {
  return plan
    .filter(scan)
    .reduce((sum, n) => sum + ((n["Actual Rows"] ?? 0) + (n["Rows Removed by Filter"] ?? 0) + (n["Rows Removed by Index Recheck"] ?? 0)) * (n["Actual Loops"] ?? 1), 0);
}

/** The types of the claim's parameters (repos/deliveries-queue.repo.ts claimStatement), for PREPARE and EXECUTE. */
export const CLAIM_PARAM_TYPES = ["uuid[]", "uuid[]", "int[]", "int", "int", "int", "text", "timestamptz", "uuid[]", "uuid[]", "timestamptz", "timestamptz"];

/** A parameter as an SQL literal of its type, for EXECUTE of a prepared statement. */
export const literal = (v: unknown, type: string) =>
  `'${Array.isArray(v) ? `{${v.join(",")}}` : v instanceof Date ? v.toISOString() : String(v)}'::${type}`;
