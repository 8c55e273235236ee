// The audit.completed events of the dispatcher bench, built the same way by the publisher and
// by the baseline sender.
import { uuidv7 } from "uuidv7";

const CONTEXTS = ["HPI section documents onset, duration and severity.", "Not found in the note.", "Documented in the assessment and plan.", "Template text only; no patient-specific detail."];

/** Event `i` against the question set `{ id, questions: [{ id, query, question_type }] }`. */
export function makeEvent(i, set) {
  const passed = i % 4 !== 0;
  return {
    id: uuidv7(),
    type: "audit.completed",
    occurred_at: new Date().toISOString(),
    data: {
      audit_id: uuidv7(),
      question_set_id: set.id,
      document_id: `doc-${100000 + i}`,
      result: passed ? "passed" : "failed",
      raw_result: passed ? "PASS (91.5%)" : "FAIL (72.5%)",
      responses: set.questions.map((q, k) => ({
        question_id: q.id,
        answer: q.question_type === "informational" ? "Standard visit template" : (i + k) % 7 === 0 ? "No" : "Yes",
        context: CONTEXTS[(i + k) % CONTEXTS.length],
        passed: q.question_type === "informational" ? null : (i + k) % 7 !== 0,
      })),
    },
  };
}

export function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
