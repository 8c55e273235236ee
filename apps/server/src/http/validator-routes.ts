import { createRequire } from "node:module";
import type { Contract } from "../contract/contract.js";
import { isRecord } from "../lib/narrow.js";

interface RouteRegexp {
  regexp: RegExp;
  keys: ReadonlyArray<{ name: string }>;
}
type PathToRegexp = (path: unknown, options?: Record<string, unknown>) => RouteRegexp;
interface PathToRegexpModule {
  pathToRegexp: PathToRegexp;
}

const isPathToRegexpModule = (mod: unknown): mod is PathToRegexpModule => isRecord(mod) && typeof mod.pathToRegexp === "function";

const original = new WeakMap<PathToRegexpModule, PathToRegexp>();

/**
 * express-openapi-validator finds a request's operation by compiling every contract path with
 * path-to-regexp, one after the other until one matches, on every request (its `lookupRoute`):
 * parsing and building up to 23 regular expressions per request, the same ones each time
 * (measured with this path-to-regexp on the build machine: 2.6 µs each, up to 60 µs a request,
 * 1–2 % of a list request's CPU). Its copy of path-to-regexp is therefore
 * answered from the contract module, which compiled every path once at start-up: the validator's
 * calls (a contract path, case-sensitive as the app routes, trailing slash optional) get the
 * contract's own compiled route, so the server has one path matcher. The matching order and the
 * use of the result stay the validator's. Any other call goes to the original function.
 *
 * This is the one hook left into the validator's internals (the module it requires); the test
 * of this file fails when an upgrade changes what the validator asks for.
 */
export function compileValidatorRoutesFromContract(contract: Contract): void {
  const fromValidator = createRequire(createRequire(import.meta.url).resolve("express-openapi-validator"));
  const mod: unknown = fromValidator("path-to-regexp");
  // a path-to-regexp without this export is one this was not written for: leave it alone
  if (!isPathToRegexpModule(mod)) return;
  const fallback = original.get(mod) ?? mod.pathToRegexp;
  original.set(mod, fallback);
  mod.pathToRegexp = function pathToRegexp(path, options) {
    const asked = typeof path === "string" && isRecord(options) && options.sensitive === true && options.strict !== true && Object.keys(options).every((k) => k === "sensitive" || k === "strict");
    return (asked && contract.route(path)) || fallback(path, options);
  };
}
