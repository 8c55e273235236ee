// An API problem in words: its `errors[]` beside the fields they name, the rest above the form.
import { ApiError, type ProblemIssue } from "@audit-review/client";

export interface Problem {
  /** what the page says above the form */
  summary: string;
  /** body fields named by the problem (`url`, `filters.question_set_ids`, …) */
  issues: ProblemIssue[];
  status: number | null;
  code: string | null;
}

export function toProblem(err: unknown): Problem {
  if (err instanceof ApiError) {
    const summary =
      err.status === 401
        ? "Your portal session has ended. Ask for a new portal link."
        : err.code === "INSUFFICIENT_SCOPE"
          ? "This portal session is not allowed to do that."
          : (err.problem?.detail ?? err.message);
    return { summary, issues: err.errors, status: err.status, code: err.code };
  }
  return { summary: err instanceof Error ? err.message : String(err), issues: [], status: null, code: null };
}

/** The messages a problem gives for a field and the fields inside it. */
export function messagesFor(problem: Problem | null, name: string): string[] {
  if (!problem) return [];
  return problem.issues.filter((i) => i.location === "body" && (i.name === name || i.name.startsWith(`${name}.`))).map((i) => i.message);
}

/** Issues that no field of the form shows: said above the form, so none is lost. */
export function unplacedIssues(problem: Problem | null, fields: readonly string[]): ProblemIssue[] {
  if (!problem) return [];
  return problem.issues.filter((i) => !(i.location === "body" && fields.some((f) => i.name === f || i.name.startsWith(`${f}.`))));
}
