// The receiver's-answer rule, its one owner: a 2xx answer is a success, and any other status is
// a failure named `unexpected_status` (3xx included: redirects are never followed). Every
// transport (HTTPS, a webhook listener's stream) reads its receiver's answer through this.
import type { DeliveryErrorCode } from "@audit-review/api-types/internal";

export interface AnswerVerdict {
  ok: boolean;
  error: { code: Extract<DeliveryErrorCode, "unexpected_status">; message: string } | null;
}

export function judgeAnswer(status: number): AnswerVerdict {
  const ok = status >= 200 && status < 300;
  return { ok, error: ok ? null : { code: "unexpected_status", message: `receiver answered ${status}` } };
}
