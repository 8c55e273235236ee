// What never reaches a log line, whatever object a caller logs by mistake: a value under a
// secret's name at the top level of the line's object or one level down, and any `headers`
// object one level down (a request's or a receiver's, whole). Log lines are built for every
// request and every delivery attempt, so the common case (nothing to hide) costs a walk over the
// keys and no copy; pino's own `redact` with wildcard paths cost ≈ 16 µs per line, as much as the
// rest of the line (bench/logging.mjs measures the logger as a whole).

/** Names whose values are censored wherever they appear at the two levels looked at. */
export const SECRET_LOG_KEYS: ReadonlySet<string> = new Set(["authorization", "token", "secret", "password", "client_secret"]);

export const LOG_CENSOR = "[redacted]";

type LogObject = Record<string, unknown>;

/** Objects looked into: plain ones and errors (whose own properties a serializer copies out), never class instances, arrays or buffers. */
function lookedInto(v: unknown): v is LogObject {
  if (v === null || typeof v !== "object") return false;
  if (v instanceof Error) return true;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** One level down: secrets, and a headers object whole. */
function redactNested(o: LogObject): LogObject {
  let out: LogObject | null = null;
  for (const key of Object.keys(o)) {
    if ((SECRET_LOG_KEYS.has(key) || key === "headers") && o[key] !== undefined) {
      // an error's copy keeps what its serializer reads (message, stack, type) as own properties
      out ??= o instanceof Error ? { ...o, type: o.name, message: o.message, stack: o.stack } : { ...o };
      out[key] = LOG_CENSOR;
    }
  }
  return out ?? o;
}

/**
 * The object a log line is built from, with its secrets censored. Never changes the caller's
 * objects: what needs hiding is copied, the rest is shared; an object with nothing to hide is
 * returned as it is.
 */
export function redactLogObject(obj: LogObject): LogObject {
  let out: LogObject | null = null;
  for (const key of Object.keys(obj)) {
    const v = obj[key];
    const r = SECRET_LOG_KEYS.has(key) && v !== undefined ? LOG_CENSOR : lookedInto(v) ? redactNested(v) : v;
    if (r !== v) {
      out ??= { ...obj };
      out[key] = r;
    }
  }
  return out ?? obj;
}
