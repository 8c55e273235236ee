// The endpoint-health rule (domain/endpoint-health.ts): what a batch of outcomes does to each
// endpoint's stored failure streak, and what becomes of deliveries whose endpoint it disables.
import { describe, expect, it } from "vitest";
import type { DeliveryUpdate } from "../../src/domain/delivery/outcome.js";
import { afterEndpointDisabled } from "../../src/domain/delivery/outcome.js";
import { batchHealth, nextHealth } from "../../src/domain/delivery/endpoint-health.js";

const now = new Date("2026-11-21T09:30:00.000Z");
const DISABLE_AFTER_MS = 5 * 86_400_000;
const at = (ms: number) => new Date(now.getTime() + ms);

describe("nextHealth (the endpoint-health rule, decided from the stored streak)", () => {
  const failing = (ms: number) => ({ effect: "failing" as const, at: at(ms) });
  const healthy = (ms: number) => ({ effect: "healthy" as const, at: at(ms) });

  it("When the first failure arrives, Then it starts the streak and nothing is disabled", () => {
    expect(nextHealth(null, [failing(0)], DISABLE_AFTER_MS)).toEqual({ failingSince: now, disabled: null });
  });

  it("When a streak is running, Then its start is kept; only a failure after the limit disables", () => {
    expect(nextHealth(at(-1000), [failing(0)], DISABLE_AFTER_MS)).toEqual({ failingSince: at(-1000), disabled: null });
    expect(nextHealth(at(-DISABLE_AFTER_MS), [failing(0)], DISABLE_AFTER_MS).disabled).toBeNull();
    expect(nextHealth(at(-DISABLE_AFTER_MS - 1), [failing(0)], DISABLE_AFTER_MS)).toEqual({
      failingSince: at(-DISABLE_AFTER_MS - 1),
      disabled: { reason: "failing", at: now },
    });
  });

  it("When a success was stored after the old streak, Then the stored state wins over what the attempt saw", () => {
    // The stored streak is the truth: an attempt claimed during an old streak that another
    // dispatcher has ended meanwhile starts a new streak instead of disabling.
    expect(nextHealth(null, [failing(0)], DISABLE_AFTER_MS).disabled).toBeNull();
  });

  it("When a batch holds a success and failures, Then they apply in the order they were decided", () => {
    expect(nextHealth(at(-DISABLE_AFTER_MS - 10), [failing(5), healthy(-5)], DISABLE_AFTER_MS)).toEqual({ failingSince: at(5), disabled: null });
    expect(nextHealth(at(-1000), [healthy(10), failing(-5)], DISABLE_AFTER_MS)).toEqual({ failingSince: null, disabled: null });
  });

  it("When the receiver answered 410, Then the endpoint is disabled as gone and its streak is left as it was", () => {
    expect(nextHealth(null, [{ effect: "gone", at: now }], DISABLE_AFTER_MS)).toEqual({ failingSince: null, disabled: { reason: "gone", at: now } });
  });
});

describe("batchHealth (a recorded batch's effect on its endpoints)", () => {
  const update = (status: DeliveryUpdate["status"]): DeliveryUpdate => ({
    status, attempt_count: 2, next_attempt_at: status === "retrying" ? at(60_000) : null, last_response_status: status === "succeeded" ? 200 : 500,
    last_error_code: status === "succeeded" ? null : "unexpected_status", last_error_message: status === "succeeded" ? null : "receiver answered 500",
    delivered_at: status === "succeeded" ? now : null, next_trigger: "scheduled",
  });
  const A = "endpoint-a";
  const B = "endpoint-b";

  it("When a failure tips an endpoint over, Then it is disabled and that endpoint's retrying deliveries end failed with their own error, others untouched", () => {
    const outcomes = [
      { endpointId: A, effect: "failing" as const, at: now, update: update("retrying") },
      { endpointId: A, effect: null, at: now, update: update("retrying") },
      { endpointId: B, effect: "failing" as const, at: now, update: update("retrying") },
    ];
    const stored = new Map([
      [A, { failingSince: at(-DISABLE_AFTER_MS - 1), failingNoticeAt: at(-DISABLE_AFTER_MS - 1) }],
      [B, { failingSince: at(-1000), failingNoticeAt: null }],
    ]);
    const out = batchHealth(outcomes, stored, DISABLE_AFTER_MS);
    expect(out.disabled).toEqual(new Map([[A, { reason: "failing", at: now }]]));
    expect(out.updates.map((u) => [u.status, u.next_attempt_at])).toEqual([["failed", null], ["failed", null], ["retrying", at(60_000)]]);
    expect(out.updates[0]!.last_error_message).toBe("receiver answered 500");
    expect(out.streaks).toEqual([
      // A's notification is outstanding already; B's streak has none yet: it is made now, about the streak's start
      { endpointId: A, failingSince: at(-DISABLE_AFTER_MS - 1), failingNoticeAt: at(-DISABLE_AFTER_MS - 1), at: now },
      { endpointId: B, failingSince: at(-1000), failingNoticeAt: at(-1000), at: now },
    ]);
  });

  it("When an endpoint was disabled or deleted meanwhile (no stored streak), Then its streak is left alone and its outcomes are stored as decided", () => {
    const out = batchHealth([{ endpointId: A, effect: "failing" as const, at: now, update: update("retrying") }], new Map(), DISABLE_AFTER_MS);
    expect(out).toEqual({ streaks: [], disabled: new Map(), updates: [update("retrying")] });
  });

  it("When a batch holds only successes, Then no stored streak is needed: each endpoint's streak ends at its latest success", () => {
    const out = batchHealth(
      [
        { endpointId: A, effect: "healthy" as const, at: at(-5), update: update("succeeded") },
        { endpointId: A, effect: "healthy" as const, at: now, update: update("succeeded") },
      ],
      null,
      DISABLE_AFTER_MS,
    );
    // the success clears an outstanding notification too (recovered is made where it is stored)
    expect(out.streaks).toEqual([{ endpointId: A, failingSince: null, failingNoticeAt: null, at: now }]);
    expect(out.disabled.size).toBe(0);
  });
});

describe("afterEndpointDisabled", () => {
  it("When the endpoint is disabled, Then only a retrying delivery changes: it ends failed; finished ones stay as they are", () => {
    const retrying: DeliveryUpdate = {
      status: "retrying", attempt_count: 1, next_attempt_at: at(5_000), last_response_status: 500,
      last_error_code: "unexpected_status", last_error_message: "receiver answered 500", delivered_at: null, next_trigger: "scheduled",
    };
    expect(afterEndpointDisabled(retrying)).toEqual({ ...retrying, status: "failed", next_attempt_at: null });
    const succeeded: DeliveryUpdate = { ...retrying, status: "succeeded", next_attempt_at: null, delivered_at: now };
    expect(afterEndpointDisabled(succeeded)).toBe(succeeded);
  });
});
