// The one message set of "this endpoint became unusable" (domain/endpoint-unavailable.ts).
import { describe, expect, it } from "vitest";
import { endpointUnavailable, unavailableCause } from "../../src/domain/delivery/unavailable.js";

describe("endpointUnavailable", () => {
  it("When the endpoint went away, Then the delivery fails with its code and no attempt is counted", () => {
    expect(endpointUnavailable("deleted", 2, 500)).toEqual({
      status: "failed",
      attempt_count: 2,
      next_attempt_at: null,
      last_response_status: 500,
      last_error_code: "endpoint_deleted",
      last_error_message: "the endpoint was deleted",
      delivered_at: null,
    });
    expect(endpointUnavailable("manual", 0, null)).toMatchObject({ last_error_code: "endpoint_disabled", last_error_message: "the endpoint was disabled" });
    expect(endpointUnavailable("failing", 0, null)).toMatchObject({ last_error_code: "endpoint_disabled", last_error_message: "the endpoint was disabled: its deliveries kept failing" });
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
