import { pino, type Logger, type DestinationStream } from "pino";
import { LOG_CENSOR, redactLogObject, SECRET_LOG_KEYS } from "./log-redaction.js";
import { stdoutLog } from "./stdout-log.js";

export type { Logger };

/**
 * Structured JSON logs, to standard output in batches (stdout-log.ts) unless a destination is
 * given. Request logs never include headers or bodies; the redaction (log-redaction.ts) is a
 * second line of defence for any object that carries credentials by mistake.
 */
export function createLogger(opts: { level?: string; destination?: DestinationStream } = {}): Logger {
  return pino(
    {
      level: opts.level ?? "info",
      base: { service: "audit-review" },
      formatters: { log: redactLogObject },
      // a child logger's bindings are not a line's object: pino hands them to serializers only
      serializers: Object.fromEntries([...SECRET_LOG_KEYS].map((key) => [key, () => LOG_CENSOR])),
    },
    opts.destination ?? stdoutLog().stream,
  );
}
