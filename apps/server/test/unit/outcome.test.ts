// The engine's binding of the delivery state machine (domain/delivery/outcome.ts) to its retry schedule.
import { describe, expect, it } from "vitest";
import { decideOutcome, type AttemptResult, type OutcomeInput } from "../../src/delivery/outcome.js";

const now = new Date("2026-11-21T09:30:00.000Z");
const at = (ms: number) => new Date(now.getTime() + ms);
const config = { scheduleMs: [0, 5_000, 300_000], jitter: 0, minBackoffMs: 60_000 };

const ok: AttemptResult = { ok: true, status: 204, error: null, retryAfterMs: null };
const status = (s: number, retryAfterMs: number | null = null): AttemptResult => ({
  ok: false,
  status: s,
  error: { code: "unexpected_status", message: `receiver answered ${s}` },
  retryAfterMs,
});
const refused: AttemptResult = { ok: false, status: null, error: { code: "connection_error", message: "connection refused" }, retryAfterMs: null };

const decide = (over: Partial<OutcomeInput>) =>
  decideOutcome({ attemptCount: 0, isTest: false, result: ok, now, random: () => 0.5, config, ...over });

describe("decideOutcome", () => {
  it("When a 2xx arrives, Then the delivery succeeds, keeps its due time, and any failure streak ends", () => {
    expect(decide({ attemptCount: 1 })).toEqual({
      delivery: {
        status: "succeeded",
        attempt_count: 2,
        next_attempt_at: null,
        last_response_status: 204,
        last_error_code: null,
        last_error_message: null,
        delivered_at: now,
        next_trigger: "scheduled",
      },
      endpoint: "healthy",
    });
  });

  it("When a test delivery's attempt ends, Then its next attempt is a test again; a manual one's is scheduled (the trigger is spent)", () => {
    expect(decide({ isTest: true, result: status(500) }).delivery.next_trigger).toBe("test");
    expect(decide({ isTest: false, oneShot: true, result: ok }).delivery.next_trigger).toBe("scheduled");
  });

  it("When an attempt fails with attempts left, Then it is retrying at now + the schedule's next delay", () => {
    const out = decide({ result: status(500) });
    expect(out.delivery).toEqual({
      status: "retrying",
      attempt_count: 1,
      next_attempt_at: at(5_000),
      last_response_status: 500,
      last_error_code: "unexpected_status",
      last_error_message: "receiver answered 500",
      delivered_at: null,
      next_trigger: "scheduled",
    });
    expect(out.endpoint).toBe("failing");
  });

  it("When jitter is configured, Then the delay moves within ±jitter", () => {
    const low = decide({ result: refused, random: () => 0, config: { ...config, jitter: 0.2 } });
    const high = decide({ result: refused, random: () => 0.999999, config: { ...config, jitter: 0.2 } });
    expect(low.delivery.next_attempt_at).toEqual(at(4_000));
    expect(high.delivery.next_attempt_at!.getTime()).toBeCloseTo(at(6_000).getTime(), -1);
  });

  it("When the last scheduled attempt fails, Then the delivery is failed and keeps its due time", () => {
    const out = decide({ attemptCount: 2, result: refused });
    expect(out.delivery).toMatchObject({ status: "failed", attempt_count: 3, next_attempt_at: null, last_response_status: null, last_error_code: "connection_error" });
  });

  it("When the receiver answers 410, Then the delivery fails at once and the endpoint is gone", () => {
    const out = decide({ result: status(410) });
    expect(out.delivery).toMatchObject({ status: "failed", attempt_count: 1, last_response_status: 410, last_error_code: "unexpected_status" });
    expect(out.endpoint).toBe("gone");
  });

  it("When a 3xx arrives, Then it is an ordinary failure (redirects are not followed)", () => {
    expect(decide({ result: status(302) }).delivery).toMatchObject({ status: "retrying", last_response_status: 302, last_error_code: "unexpected_status" });
  });

  it("When a 503 carries Retry-After, Then it is honoured within [delay, 2×delay]", () => {
    expect(decide({ result: status(503, 7_000) }).delivery.next_attempt_at).toEqual(at(7_000));
    expect(decide({ result: status(503, 60_000) }).delivery.next_attempt_at).toEqual(at(10_000));
    expect(decide({ result: status(503, 1_000) }).delivery.next_attempt_at).toEqual(at(5_000));
  });

  it("When a 429 or a timeout ends the attempt, Then the next delay is at least the minimum backoff", () => {
    expect(decide({ result: status(429) }).delivery.next_attempt_at).toEqual(at(60_000));
    const timeout: AttemptResult = { ok: false, status: null, error: { code: "timeout", message: "slow" }, retryAfterMs: null };
    expect(decide({ result: timeout }).delivery.next_attempt_at).toEqual(at(60_000));
  });

  it("When a manual retry fails with attempts left, Then it is one attempt: the delivery is failed, not rescheduled", () => {
    const out = decide({ result: status(500), oneShot: true });
    expect(out.delivery).toMatchObject({ status: "failed", attempt_count: 1, next_attempt_at: null, last_response_status: 500 });
    expect(out.endpoint).toBe("failing");
  });
});
