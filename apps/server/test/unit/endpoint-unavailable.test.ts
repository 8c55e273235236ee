// The one message set of "this endpoint became unusable" (domain/delivery/unavailable.ts), and
// failing an unusable endpoint's queue.
import { describe, expect, it } from "vitest";
import { endpointUnavailable, failQueue, unavailableCause } from "../../src/domain/delivery/unavailable.js";

describe("endpointUnavailable", () => {
  it("When the endpoint went away, Then the delivery fails with its code and no attempt is counted", () => {
    expect(endpointUnavailable("deleted", { attemptCount: 2, lastStatus: 500, isTest: false })).toEqual({
      status: "failed",
      attempt_count: 2,
      next_attempt_at: null,
      last_response_status: 500,
      last_error_code: "endpoint_deleted",
      last_error_message: "the endpoint was deleted",
      delivered_at: null,
      next_trigger: "scheduled",
    });
    const fresh = { attemptCount: 0, lastStatus: null, isTest: true };
    expect(endpointUnavailable("manual", fresh)).toMatchObject({ last_error_code: "endpoint_disabled", last_error_message: "the endpoint was disabled", next_trigger: "test" });
    expect(endpointUnavailable("failing", fresh)).toMatchObject({ last_error_code: "endpoint_disabled", last_error_message: "the endpoint was disabled: its deliveries kept failing" });
  });
});

describe("failQueue", () => {
  it("When an endpoint becomes unusable, Then every live delivery of it fails with the cause's error, and no final one is touched", () => {
    const at = new Date("2026-11-26T10:00:00.000Z");
    expect(failQueue("gone", at)).toEqual({
      from: ["pending", "retrying"],
      status: "failed",
      last_error_code: "endpoint_disabled",
      last_error_message: "the endpoint was disabled: its receiver answered 410 Gone",
      at,
    });
    expect(failQueue("deleted", at)).toMatchObject({ last_error_code: "endpoint_deleted" });
  });
});

describe("unavailableCause", () => {
  it("When the endpoint row is read, Then deletion wins over disabling, and an unknown reason counts as manual", () => {
    const d = new Date();
    expect(unavailableCause({ deleted_at: d, disabled_reason: "gone" })).toBe("deleted");
    expect(unavailableCause({ deleted_at: null, disabled_reason: "gone" })).toBe("gone");
    expect(unavailableCause({ deleted_at: null, disabled_reason: "failing" })).toBe("failing");
    expect(unavailableCause({ deleted_at: null, disabled_reason: "manual" })).toBe("manual");
    expect(unavailableCause({ deleted_at: null, disabled_reason: null })).toBe("manual");
  });
});
