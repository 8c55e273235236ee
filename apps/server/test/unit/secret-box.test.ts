import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createSecretBox, ENCRYPTION_KEY_FILE, loadEncryptionKey } from "../../src/lib/secret-box.js";

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "ars-secret-box-"));
  dirs.push(dir);
  return dir;
}

afterEach(() => {
  while (dirs.length) rmSync(dirs.pop()!, { recursive: true, force: true });
});

describe("secret box", () => {
  const key = randomBytes(32);
  const box = createSecretBox(key);

  it("round-trips text, including empty and non-ASCII", () => {
    for (const text of ["whsec_" + randomBytes(32).toString("base64"), "", "pässwörd ✓ 🔑"]) {
      expect(box.open(box.seal(text))).toBe(text);
    }
  });

  it("never stores the plaintext and uses a fresh IV each time", () => {
    const secret = "client-secret-value";
    const a = box.seal(secret);
    const b = box.seal(secret);
    expect(a.equals(b)).toBe(false);
    expect(a.includes(Buffer.from(secret))).toBe(false);
    // version byte, 12-byte IV, 16-byte tag, then the ciphertext (same length as the plaintext)
    expect(a[0]).toBe(1);
    expect(a.length).toBe(1 + 12 + 16 + Buffer.byteLength(secret));
  });

  it("opens values read back from the database as Uint8Array", () => {
    const sealed = box.seal("abc");
    expect(box.open(new Uint8Array(sealed))).toBe("abc");
  });

  it("detects tampering anywhere in the sealed value", () => {
    const sealed = box.seal("do not touch");
    for (let i = 1; i < sealed.length; i++) {
      const tampered = Buffer.from(sealed);
      tampered[i] = tampered[i]! ^ 0x01;
      expect(() => box.open(tampered), `byte ${i}`).toThrow(/wrong encryption key or altered data/);
    }
    expect(() => box.open(sealed.subarray(0, sealed.length - 1))).toThrow();
  });

  it("rejects an unknown format version and truncated input", () => {
    const sealed = box.seal("x");
    const otherVersion = Buffer.from(sealed);
    otherVersion[0] = 2;
    expect(() => box.open(otherVersion)).toThrow(/known format/);
    expect(() => box.open(Buffer.alloc(10))).toThrow(/known format/);
  });

  it("rejects a value sealed with another key", () => {
    const other = createSecretBox(randomBytes(32));
    expect(() => other.open(box.seal("secret"))).toThrow(/wrong encryption key/);
  });

  it("requires a 32-byte key", () => {
    expect(() => createSecretBox(randomBytes(16))).toThrow(/32 bytes/);
  });

  it("is not affected by later changes to the caller's key buffer", () => {
    const k = randomBytes(32);
    const b = createSecretBox(k);
    const sealed = b.seal("stable");
    k.fill(0);
    expect(b.open(sealed)).toBe("stable");
  });
});

describe("loadEncryptionKey", () => {
  it("takes ARS_ENCRYPTION_KEY first, even with a data directory", () => {
    const key = randomBytes(32);
    const dataDir = tempDir();
    expect(loadEncryptionKey({ envValue: key.toString("base64"), dataDir }).equals(key)).toBe(true);
    expect(() => statSync(join(dataDir, ENCRYPTION_KEY_FILE))).toThrow();
  });

  it("rejects an invalid environment key without printing it", () => {
    const tooShort = randomBytes(16).toString("base64");
    const notBase64 = "this is definitely not base64!!!";
    for (const bad of [tooShort, notBase64, randomBytes(33).toString("base64")]) {
      let message = "";
      try {
        loadEncryptionKey({ envValue: bad });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/ARS_ENCRYPTION_KEY must be the base64 encoding of exactly 32/);
      expect(message).not.toContain(bad);
    }
  });

  it("creates a key file (mode 0600) in the data directory once and reuses it", () => {
    const dataDir = join(tempDir(), "nested", "data");
    const first = loadEncryptionKey({ dataDir });
    const file = join(dataDir, ENCRYPTION_KEY_FILE);
    expect(first.length).toBe(32);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(Buffer.from(readFileSync(file, "utf8").trim(), "base64").equals(first)).toBe(true);
    expect(loadEncryptionKey({ dataDir }).equals(first)).toBe(true);
    // An empty environment value does not count as set.
    expect(loadEncryptionKey({ envValue: "", dataDir }).equals(first)).toBe(true);
  });

  it("rejects a corrupt key file without printing its content", () => {
    const dataDir = tempDir();
    writeFileSync(join(dataDir, ENCRYPTION_KEY_FILE), "c2hvcnQ=\n", { mode: 0o600 });
    expect(() => loadEncryptionKey({ dataDir })).toThrow(/encryption\.key must be the base64 encoding/);
    try {
      loadEncryptionKey({ dataDir });
    } catch (error) {
      expect((error as Error).message).not.toContain("c2hvcnQ=");
    }
  });

  it("fails clearly without an environment key or data directory", () => {
    expect(() => loadEncryptionKey({})).toThrow(/no encryption key: set ARS_ENCRYPTION_KEY/);
  });
});
