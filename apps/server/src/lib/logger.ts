import { pino, type Logger, type DestinationStream } from "pino";

export type { Logger };

/**
 * Structured JSON logs. Request logs never include headers or bodies; the redact list is a
 * second line of defence for any object that carries credentials by mistake.
 */
export function createLogger(opts: { level?: string; destination?: DestinationStream } = {}): Logger {
  return pino(
    {
      level: opts.level ?? "info",
      base: { service: "audit-review" },
      redact: {
        paths: [
          "authorization",
          "headers.authorization",
          "req.headers.authorization",
          "token",
          "secret",
          "password",
          "client_secret",
          "*.authorization",
          "*.token",
          "*.secret",
          "*.password",
          "*.client_secret",
          "*.headers",
        ],
        censor: "[redacted]",
      },
    },
    opts.destination,
  );
}
