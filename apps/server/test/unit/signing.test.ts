import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { generateSigningSecret, legacySignature, secretHint, signatureHeader } from "../../src/delivery/signing.js";

// Published test vector of the Standard Webhooks specification.
const VECTOR = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};

describe("signatureHeader", () => {
  it("When signing the Standard Webhooks test vector, Then the published signature comes out", () => {
    const header = signatureHeader({ id: VECTOR.id, timestamp: VECTOR.timestamp, body: VECTOR.body, secrets: [VECTOR.secret] });
    expect(header).toBe(VECTOR.signature);
  });

  it("When the timestamp is given as a string, Then the signature is the same", () => {
    expect(signatureHeader({ id: VECTOR.id, timestamp: String(VECTOR.timestamp), body: VECTOR.body, secrets: [VECTOR.secret] })).toBe(VECTOR.signature);
  });

  it("When two secrets are active (rotation), Then two space-separated v1 signatures come out, current first", () => {
    const previous = generateSigningSecret();
    const header = signatureHeader({ id: VECTOR.id, timestamp: VECTOR.timestamp, body: VECTOR.body, secrets: [VECTOR.secret, previous] });
    const [first, second, ...rest] = header.split(" ");
    expect(rest).toEqual([]);
    expect(first).toBe(VECTOR.signature);
    const key = Buffer.from(previous.slice("whsec_".length), "base64");
    const expected = createHmac("sha256", key).update(`${VECTOR.id}.${VECTOR.timestamp}.${VECTOR.body}`).digest("base64");
    expect(second).toBe(`v1,${expected}`);
  });

  it("When any of id, timestamp or body changes, Then the signature changes", () => {
    const base = { id: VECTOR.id, timestamp: VECTOR.timestamp, body: VECTOR.body, secrets: [VECTOR.secret] };
    expect(signatureHeader({ ...base, id: "msg_other" })).not.toBe(VECTOR.signature);
    expect(signatureHeader({ ...base, timestamp: VECTOR.timestamp + 1 })).not.toBe(VECTOR.signature);
    expect(signatureHeader({ ...base, body: '{"test":2432232314}' })).not.toBe(VECTOR.signature);
  });

  it("When a secret lacks the whsec_ prefix or is not base64, Then it throws without echoing the secret", () => {
    const sign = (secret: string) => () => signatureHeader({ id: "a", timestamp: 1, body: "", secrets: [secret] });
    expect(sign("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")).toThrow(/whsec_/);
    expect(sign("whsec_not base64!")).toThrow(/whsec_/);
    try {
      sign("whsec_s3cr3t!!")();
    } catch (err) {
      expect((err as Error).message).not.toContain("s3cr3t");
    }
    expect(() => signatureHeader({ id: "a", timestamp: 1, body: "", secrets: [] })).toThrow();
  });
});

describe("legacySignature", () => {
  it("When signing a body, Then it is sha256= and the hex HMAC keyed by the whole secret string", () => {
    // Independent reference value (RFC 4231-style HMAC-SHA256, key and data as UTF-8 strings).
    expect(legacySignature("key", "The quick brown fox jumps over the lazy dog")).toBe(
      "sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8",
    );
  });

  it("When the secret is a whsec_ value, Then the string itself (not its decoded key) is the key", () => {
    const expected = createHmac("sha256", VECTOR.secret).update(VECTOR.body).digest("hex");
    expect(legacySignature(VECTOR.secret, VECTOR.body)).toBe(`sha256=${expected}`);
  });
});

describe("generateSigningSecret / secretHint", () => {
  it("When a secret is generated, Then it is whsec_ plus base64 of 32 random bytes, different each time", () => {
    const a = generateSigningSecret();
    const b = generateSigningSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(a.slice(6), "base64")).toHaveLength(32);
    expect(a).not.toBe(b);
  });

  it("When a generated secret signs, Then signing accepts it", () => {
    expect(signatureHeader({ id: "x", timestamp: 1, body: "{}", secrets: [generateSigningSecret()] })).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
  });

  it("When hinting a secret, Then only the prefix and the last 4 characters show", () => {
    expect(secretHint("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")).toBe("whsec_…LaSw");
  });
});
