import { describe, expect, it } from "vitest";
import { RESPONSE_PREVIEW_BYTES, responsePreview } from "../../src/delivery/sender.js";

describe("the response body kept with an attempt", () => {
  it("when the body is short, then all of it is kept", () => {
    expect(responsePreview(Buffer.from('{"ok":true}'))).toBe('{"ok":true}');
  });

  it("when the body is longer than 1 KiB, then exactly its first 1 KiB is kept", () => {
    const text = responsePreview(Buffer.from("a".repeat(5000)));
    expect(text).toBe("a".repeat(RESPONSE_PREVIEW_BYTES));
  });

  it("when the limit cuts a multi-byte character, then the partial character is dropped, not mangled", () => {
    const body = Buffer.from("a".repeat(RESPONSE_PREVIEW_BYTES - 1) + "é" + "tail");
    const text = responsePreview(body);
    expect(text).toBe("a".repeat(RESPONSE_PREVIEW_BYTES - 1));
    expect(text).not.toContain("\uFFFD");
  });

  it("when the body holds NUL bytes, then they are removed (PostgreSQL text cannot store them)", () => {
    expect(responsePreview(Buffer.from("a\u0000b"))).toBe("ab");
  });
});
