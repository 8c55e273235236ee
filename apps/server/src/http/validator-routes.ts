import { createRequire } from "node:module";
import { isRecord } from "../lib/narrow.js";

interface RouteRegexp {
  regexp: RegExp;
  keys: ReadonlyArray<{ name: string }>;
}
type PathToRegexp = (path: unknown, options?: Record<string, unknown>) => RouteRegexp;
interface PathToRegexpModule {
  pathToRegexp: PathToRegexp;
}

const MAX_PATHS = 500;
const memoised = new WeakSet<object>();

const isPathToRegexpModule = (mod: unknown): mod is PathToRegexpModule => isRecord(mod) && typeof mod.pathToRegexp === "function";

/**
 * express-openapi-validator finds a request's operation by compiling every contract path with
 * path-to-regexp, one after the other until one matches, on every request (its `lookupRoute`):
 * parsing and building ~20 regular expressions per request, the same ones each time. This gives
 * its copy of path-to-regexp a memo for the calls it makes (a path string, and only the
 * `sensitive`/`strict` options), so each contract path is compiled once; the matching itself,
 * its order and its options are the validator's as before. The compiled result is frozen: the
 * validator only reads it. Other callers and other options go to the original function.
 */
export function memoiseValidatorRouteRegexps(): void {
  const fromValidator = createRequire(createRequire(import.meta.url).resolve("express-openapi-validator"));
  const mod: unknown = fromValidator("path-to-regexp");
  // a path-to-regexp without this export is one this memo was not written for: leave it alone
  if (!isPathToRegexpModule(mod) || memoised.has(mod)) return;
  const original = mod.pathToRegexp;
  const compiled = new Map<string, RouteRegexp>();
  mod.pathToRegexp = function pathToRegexp(path, options) {
    if (typeof path !== "string" || options === undefined) return original(path, options);
    for (const k in options) if (k !== "sensitive" && k !== "strict") return original(path, options);
    const key = `${options.sensitive ? "s" : "i"}${path}`;
    let hit = compiled.get(key);
    if (hit === undefined) {
      const made = original(path, options);
      // the validator asks only for its contract's paths; anything beyond that is not memoised
      if (compiled.size >= MAX_PATHS) return made;
      hit = Object.freeze({ regexp: made.regexp, keys: Object.freeze(made.keys.map((k) => Object.freeze({ ...k }))) });
      compiled.set(key, hit);
    }
    return hit;
  };
  memoised.add(mod);
}
