// A Server-Sent Events response (text/event-stream). Nothing is written until the first event, so
// a request refused before that still answers with a problem. What a client has not read yet is
// bounded: once more than `maxBufferedBytes` wait for it, it must show it reads (the socket takes
// more bytes) within `stallMs`, or its connection is dropped and `onOverflow` told, instead of
// holding every later event in memory. Judging progress rather than bytes alone keeps a burst of
// large events to a client that reads from counting as falling behind; what a burst can hold is
// bounded by what the engine sends at once.
import type { Response } from "express";

export interface EventStream {
  /** false once the stream is over: ended, closed by the client, or dropped for not reading */
  event(name: string, data: unknown): boolean;
  comment(text: string): boolean;
  /** Ends the stream from the server's side, with a last `closed` event saying why. */
  close(reason: string): void;
}

/** What may wait for a client before it must show it reads, and for how long it may not (the contract: 1 MiB, 5 s). */
export const MAX_STREAM_BUFFER_BYTES = 1024 * 1024;
export const STREAM_STALL_MS = 5_000;

export interface EventStreamOptions {
  maxBufferedBytes?: number;
  stallMs?: number;
  /** The client stopped reading: told just before its connection is dropped. */
  onOverflow?(bufferedBytes: number): void;
}

export function eventStream(res: Response, { maxBufferedBytes = MAX_STREAM_BUFFER_BYTES, stallMs = STREAM_STALL_MS, onOverflow }: EventStreamOptions = {}): EventStream {
  let over = false;
  let watching: NodeJS.Timeout | null = null;
  res.on("close", () => {
    over = true;
    if (watching) clearTimeout(watching);
  });
  const open = () => {
    if (res.headersSent) return;
    res.status(200);
    res.setHeader("Content-Type", "text/event-stream; charset=utf-8");
    // no cache or proxy may hold events back
    res.setHeader("Cache-Control", "no-cache, no-transform");
    res.setHeader("X-Accel-Buffering", "no");
    res.flushHeaders();
    // the stream lives as long as the client wants; only keep-alives show it is alive
    res.socket?.setTimeout(0);
    res.socket?.setKeepAlive(true);
  };
  const sent = () => res.socket?.bytesWritten ?? 0;
  /** Over the bound: the socket must take more within `stallMs`, or the client is dropped. */
  const watch = () => {
    if (watching) return;
    const mark = sent();
    watching = setTimeout(() => {
      watching = null;
      if (over || res.writableLength <= maxBufferedBytes) return;
      if (sent() > mark) return watch();
      over = true;
      onOverflow?.(res.writableLength);
      res.destroy();
    }, stallMs);
    watching.unref();
  };
  const write = (text: string): boolean => {
    if (over || res.writableEnded || res.destroyed) return false;
    open();
    res.write(text);
    if (res.writableLength > maxBufferedBytes) watch();
    return true;
  };
  return {
    event: (name, data) => write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`),
    comment: (text) => write(`: ${text}\n\n`),
    close(reason) {
      write(`event: closed\ndata: ${JSON.stringify({ reason })}\n\n`);
      over = true;
      if (watching) clearTimeout(watching);
      if (!res.writableEnded && !res.destroyed) res.end();
    },
  };
}
