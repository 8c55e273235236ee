// Secrets never reach a log line (src/lib/log-redaction.ts), whatever object a caller logs.
import { describe, expect, it } from "vitest";
import { LOG_CENSOR, redactLogObject, SECRET_LOG_KEYS } from "../../src/lib/log-redaction.js";
import { capturedLogger } from "../harness/captured-logger.js";

const SECRET = "s3cr3t-value-that-must-not-appear";

describe("log redaction", () => {
  it("when a line carries a secret under any of the names, at the top or one level down, then the logged line holds none", () => {
    const { logger, lines } = capturedLogger("info");
    for (const key of SECRET_LOG_KEYS) {
      logger.info({ [key]: SECRET }, "top");
      logger.info({ endpoint: { id: "ep_1", [key]: SECRET } }, "nested");
    }
    logger.info({ headers: { authorization: `Bearer ${SECRET}`, accept: "application/json" } }, "top-level headers");
    logger.info({ req: { method: "POST", headers: { "x-api-key": SECRET } } }, "a request's headers");
    logger.info({ response: { status: 200, headers: { "set-cookie": SECRET } } }, "a receiver's headers");
    logger.child({ token: SECRET }).info("a child's bindings");
    expect(lines).toHaveLength(2 * SECRET_LOG_KEYS.size + 4);
    for (const line of lines) expect(line).not.toContain(SECRET);
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(parsed[0]).toMatchObject({ authorization: LOG_CENSOR, msg: "top" });
    expect(parsed[1]).toMatchObject({ endpoint: { id: "ep_1", authorization: LOG_CENSOR } });
    // the top-level headers keep what is not a secret; headers one level down go whole
    expect(parsed[2 * SECRET_LOG_KEYS.size]).toMatchObject({ headers: { authorization: LOG_CENSOR, accept: "application/json" } });
    expect(parsed[2 * SECRET_LOG_KEYS.size + 1]).toMatchObject({ req: { method: "POST", headers: LOG_CENSOR } });
    expect(parsed[2 * SECRET_LOG_KEYS.size + 3]).toMatchObject({ token: LOG_CENSOR, msg: "a child's bindings" });
  });

  it("when an error carries a secret as a property, then its message and stack are logged and the secret is not", () => {
    const { logger, lines } = capturedLogger("info");
    const err = Object.assign(new Error("token endpoint refused"), { client_secret: SECRET, status: 401 });
    logger.error({ err }, "fetch failed");
    logger.error(err);
    for (const line of lines) {
      expect(line).not.toContain(SECRET);
      expect(JSON.parse(line)).toMatchObject({ err: { message: "token endpoint refused", client_secret: LOG_CENSOR, status: 401 } });
      expect(JSON.parse(line).err.stack).toContain("token endpoint refused");
    }
  });

  it("when nothing needs hiding, then the object is logged as it is, and a caller's object is never changed", () => {
    const plain = { delivery_id: "d_1", attempt: 2, endpoint: { id: "ep_1", url: "https://example.com/hook" }, at: new Date(0), list: [{ token: "x" }] };
    expect(redactLogObject(plain)).toBe(plain);
    const nested = { id: "ep_1", secret: SECRET };
    const obj = { endpoint: nested, token: SECRET, n: 1 };
    const out = redactLogObject(obj);
    expect(out).toEqual({ endpoint: { id: "ep_1", secret: LOG_CENSOR }, token: LOG_CENSOR, n: 1 });
    expect(obj).toEqual({ endpoint: { id: "ep_1", secret: SECRET }, token: SECRET, n: 1 });
    expect(nested.secret).toBe(SECRET);
  });
});
