// Where a process's log lines go: standard output, written in batches. pino's own default writes
// every line on its own (an `fs.write` through libuv's thread pool per line once the process is
// not busy): ≈ 20 µs of CPU per line more than gathering them, paid on every request's access
// line and every delivery attempt's line (bench/logging.mjs). Lines are gathered up to
// LOG_BATCH_BYTES and written at least every LOG_FLUSH_MS, so an idle process's line still shows
// within that time; what is gathered is written at exit (pino flushes its streams then), and lost
// only if the process is killed outright (SIGKILL), at most LOG_FLUSH_MS of lines.
//
// Standard output that nobody drains (a stuck log shipper, a pipe whose reader stopped) never
// stops the event loop: writes go through the thread pool, and lines wait in memory up to
// LOG_MAX_PENDING_BYTES; beyond that they are dropped, counted (ars_log_lines_dropped_total), and
// said once a minute on standard error.
import type { DestinationStream } from "pino";
import { pino } from "pino";

export const LOG_BATCH_BYTES = 8 * 1024;
export const LOG_FLUSH_MS = 100;
export const LOG_MAX_PENDING_BYTES = 16 * 1024 * 1024;
const DROP_NOTICE_EVERY_MS = 60_000;

export interface LogOutput {
  stream: DestinationStream;
  /** lines dropped because the output was not drained */
  dropped(): number;
}

/** Lines to `fd`, at most `maxPendingBytes` of them waiting (a test lowers the bound). */
export function createLogOutput(fd: number, maxPendingBytes = LOG_MAX_PENDING_BYTES): LogOutput {
  const stream = pino.destination({ dest: fd, sync: false, minLength: LOG_BATCH_BYTES, periodicFlush: LOG_FLUSH_MS, maxLength: maxPendingBytes });
  let dropped = 0;
  let noticedAt = -Infinity;
  stream.on("drop", () => {
    dropped++;
    const now = performance.now();
    if (now - noticedAt < DROP_NOTICE_EVERY_MS) return;
    noticedAt = now;
    process.stderr.write(`${JSON.stringify({ level: 40, time: Date.now(), msg: `log lines dropped: standard output is not being read and ${maxPendingBytes} bytes wait for it (ars_log_lines_dropped_total counts them; ${dropped} so far)` })}\n`);
  });
  return { stream, dropped: () => dropped };
}

let stdout: LogOutput | null = null;

/** The process's standard output, one for every logger of the process (lines of two loggers keep their order). */
export function stdoutLog(): LogOutput {
  return (stdout ??= createLogOutput(1));
}

/** Lines the process dropped so far (0 until something logged to standard output). */
export function droppedLogLines(): number {
  return stdout?.dropped() ?? 0;
}
