import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { memoiseValidatorRouteRegexps } from "../../src/http/validator-routes.js";

type Compiled = { regexp: RegExp; keys: Array<{ name: string }> };
const fromValidator = createRequire(createRequire(import.meta.url).resolve("express-openapi-validator"));
const ptr = fromValidator("path-to-regexp") as { pathToRegexp: (p: string, o?: object) => Compiled };

describe("the validator's route regexps", () => {
  it("when memoised, then a path compiles once per case sensitivity, and matches as before (params, case, trailing slash)", () => {
    memoiseValidatorRouteRegexps();
    memoiseValidatorRouteRegexps(); // idempotent: the app may be built more than once per process
    const a = ptr.pathToRegexp("/v2/webhook_endpoints/:endpoint_id", { sensitive: true, strict: false });
    expect(ptr.pathToRegexp("/v2/webhook_endpoints/:endpoint_id", { sensitive: true, strict: false })).toBe(a);
    expect(ptr.pathToRegexp("/v2/webhook_endpoints/:endpoint_id", { sensitive: false, strict: false })).not.toBe(a);
    expect(a.keys.map((k) => k.name)).toEqual(["endpoint_id"]);
    expect(a.regexp.exec("/v2/webhook_endpoints/abc")?.[1]).toBe("abc");
    expect(a.regexp.exec("/v2/webhook_endpoints/abc/")?.[1]).toBe("abc");
    expect(a.regexp.exec("/v2/Webhook_endpoints/abc")).toBeNull();
    expect(a.regexp.exec("/v2/webhook_endpoints/abc/rotate_secret")).toBeNull();
    expect(Object.isFrozen(a)).toBe(true);
  });

  it("when called with other options, then the original function answers, uncached", () => {
    memoiseValidatorRouteRegexps();
    const one = ptr.pathToRegexp("/x/:y", { end: false });
    expect(ptr.pathToRegexp("/x/:y", { end: false })).not.toBe(one);
    expect(one.regexp.test("/x/1/more")).toBe(true);
  });
});
