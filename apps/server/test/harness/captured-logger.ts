// A logger whose lines a test reads back: what was logged, as written (one JSON line each).
import { Writable } from "node:stream";
import { createLogger } from "../../src/lib/logger.js";
import type { Logger } from "../../src/lib/logger.js";

export function capturedLogger(level = "info"): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { logger: createLogger({ level, destination }), lines };
}
