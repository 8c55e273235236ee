import { describe, expect, it } from "vitest";
import { REDACTED, redactionForms, redactPreview } from "../../src/delivery/redact.js";
import { RESPONSE_PREVIEW_BYTES } from "../../src/delivery/sender.js";

describe("redactPreview", () => {
  it("when a secret appears in any spelling, then each is cut", () => {
    const secret = "p@ss w/rd+é";
    const forms = redactionForms([secret]);
    const text = [secret, Buffer.from(secret).toString("base64"), encodeURIComponent(secret), new URLSearchParams({ a: secret }).toString().slice(2), JSON.stringify(secret)].join(" | ");
    const out = redactPreview(text, forms);
    expect(out).not.toContain("rd");
    expect(out.split(REDACTED)).toHaveLength(6);
  });

  it("when a secret contains another, then the longer is cut whole", () => {
    expect(redactPreview("user:secret1 secret1", redactionForms(["secret1", "user:secret1"]))).toBe(`${REDACTED} ${REDACTED}`);
  });

  it("when values are shorter than 4 characters, then they are left alone", () => {
    expect(redactionForms(["1", "abc"])).toEqual([]);
    expect(redactPreview("1 abc", redactionForms(["1", "abc"]))).toBe("1 abc");
  });

  it("when the preview was cut inside a secret, then the tail that begins it is cut; a short text's ending is kept", () => {
    const secret = "0123456789abcdef";
    const cut = "x".repeat(RESPONSE_PREVIEW_BYTES - 5) + secret.slice(0, 5);
    expect(redactPreview(cut, redactionForms([secret]))).toBe("x".repeat(RESPONSE_PREVIEW_BYTES - 5) + REDACTED);
    expect(redactPreview("ends with 01234", redactionForms([secret]))).toBe("ends with 01234");
  });
});
