// Step 3 of a delivery: one attempt on the wire. Receiver authentication first (a token fetch
// failure is the attempt's outcome, `auth_error`), then the prepared request; a 401 from an
// OAuth2 receiver invalidates the token and the request is sent once more with a fresh one.
import type { QueueEndpoint, QueueEvent } from "../repos/deliveries-queue.repo.js";
import type { Clock } from "../clock/clock.js";
import type { AttemptResult } from "./outcome.js";
import { createPayloadCache, prepare, type SigningKeys } from "./prepare.js";
import type { ReceiverAuth } from "./receiver-auth.js";
import { redactionForms, redactPreview } from "./redact.js";
import { parseRetryAfter } from "./retry-schedule.js";
import type { Sender } from "./sender.js";

export interface AttemptReport extends AttemptResult {
  /** the first bytes of the receiver's answer; null when none arrived */
  responseBody: string | null;
  startedAt: Date;
  durationMs: number;
}

export interface AttemptDeps {
  sender: Pick<Sender, "send">;
  receiverAuth: ReceiverAuth;
  clock: Clock;
}

export type Attempt = (endpoint: QueueEndpoint, event: QueueEvent, signing: SigningKeys) => Promise<AttemptReport>;

export function createAttempt({ sender, receiverAuth, clock }: AttemptDeps): Attempt {
  const bodies = createPayloadCache();
  return async (endpoint, event, signing) => {
    const startedAt = clock.now();
    const started = performance.now();
    const report = (r: AttemptResult & { responseBody: string | null }): AttemptReport => ({
      ...r,
      startedAt,
      durationMs: Math.round(performance.now() - started),
    });

    let auth = await receiverAuth.headersFor(endpoint);
    if (!auth.ok) return report({ ok: false, status: null, error: auth.error, retryAfterMs: null, responseBody: null });
    const send = (authHeaders: Record<string, string>) => sender.send(prepare({ endpoint, event, signing, authHeaders, at: clock.now(), bodies }));
    let res = await send(auth.headers);
    // the receiver has seen every secret sent to it in this attempt: the refused token too
    const secrets = [...auth.secrets];
    if (res.status === 401 && auth.refreshable) {
      receiverAuth.invalidate(endpoint, auth.headers);
      auth = await receiverAuth.headersFor(endpoint);
      if (!auth.ok) return report({ ok: false, status: null, error: auth.error, retryAfterMs: null, responseBody: null });
      secrets.push(...auth.secrets);
      res = await send(auth.headers);
    }
    return report({
      ok: res.ok,
      status: res.status,
      error: res.error,
      retryAfterMs: parseRetryAfter(res.headers["retry-after"], clock.now()),
      responseBody: res.responseBody === null || secrets.length === 0 ? res.responseBody : redactPreview(res.responseBody, redactionForms(secrets)),
    });
  };
}
