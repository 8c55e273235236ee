// The delivery lifecycle (domain/delivery/): which statuses are live, what each transition writes,
// and from which statuses it may. Every rule here is a Record over every status, so a status
// added to the contract's enum fails to compile until each transition says what it does with it.
import { describe, expect, it } from "vitest";
import { newDelivery } from "../../src/domain/delivery/fan-out.js";
import { manualRetry, recovery } from "../../src/domain/delivery/requeue.js";
import { ALL_STATUSES, FINAL_STATUSES, isLive, LIVE_STATUSES } from "../../src/domain/delivery/status.js";
import { judgeAnswer } from "../../src/domain/delivery/answer.js";
import { LIVE_SQL } from "../../src/repos/delivery-sql.js";

const at = new Date("2026-11-26T10:00:00.000Z");

describe("statuses", () => {
  it("When the lifecycle splits the statuses, Then pending and retrying are live, succeeded and failed final, each once", () => {
    expect(LIVE_STATUSES).toEqual(["pending", "retrying"]);
    expect(FINAL_STATUSES).toEqual(["succeeded", "failed"]);
    expect([...LIVE_STATUSES, ...FINAL_STATUSES].sort()).toEqual([...ALL_STATUSES].sort());
    expect(ALL_STATUSES.filter(isLive)).toEqual(LIVE_STATUSES);
    // the SQL every repository uses is rendered from the same set (the queue's partial indexes name it too)
    expect(LIVE_SQL).toBe("('pending', 'retrying')");
  });
});

describe("transitions", () => {
  it("When fan-out creates a delivery, Then it is pending, due at once, with no attempt, and a test event's is a test", () => {
    expect(newDelivery(false, at)).toEqual({ status: "pending", attempt_count: 0, next_attempt_at: at, next_trigger: "scheduled" });
    expect(newDelivery(true, at).next_trigger).toBe("test");
  });

  it("When a delivery is retried by hand, Then only a final one is queued again, due now, for one manual attempt", () => {
    expect(manualRetry(at)).toEqual({ from: ["succeeded", "failed"], status: "pending", next_attempt_at: at, next_trigger: "manual", at });
  });

  it("When an endpoint's deliveries are recovered, Then only failed ones are queued again", () => {
    expect(recovery(at)).toMatchObject({ from: ["failed"], status: "pending", next_trigger: "manual" });
  });

  it("When a receiver answers, Then a 2xx succeeds and anything else (3xx included) is unexpected_status", () => {
    expect(judgeAnswer(204)).toEqual({ ok: true, error: null });
    for (const status of [199, 301, 404, 500]) expect(judgeAnswer(status)).toEqual({ ok: false, error: { code: "unexpected_status", message: `receiver answered ${status}` } });
  });
});
