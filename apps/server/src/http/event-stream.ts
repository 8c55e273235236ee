// A Server-Sent Events response (text/event-stream). Nothing is written until the first event, so
// a request refused before that still answers with a problem. What the client has not read yet
// is bounded: when an event is to be written while more than `maxBufferedBytes` of earlier ones
// still wait in the response's buffer (a client that stopped reading), the connection is dropped
// and `onOverflow` told, instead of holding every later event in memory. Judging what is left
// of earlier writes, not the size after this one, keeps one large event to a client that reads
// from ever counting as falling behind.
import type { Response } from "express";

export interface EventStream {
  /** false once the stream is over: ended, closed by the client, or dropped for not reading */
  event(name: string, data: unknown): boolean;
  comment(text: string): boolean;
  /** Ends the stream from the server's side, with a last `closed` event saying why. */
  close(reason: string): void;
}

/** What may wait for a client to read before it is dropped (the contract says 1 MiB). */
export const MAX_STREAM_BUFFER_BYTES = 1024 * 1024;

export interface EventStreamOptions {
  maxBufferedBytes?: number;
  /** The client stopped reading: the connection was dropped (the write that overflowed returned false). */
  onOverflow?(bufferedBytes: number): void;
}

export function eventStream(res: Response, { maxBufferedBytes = MAX_STREAM_BUFFER_BYTES, onOverflow }: EventStreamOptions = {}): EventStream {
  let over = false;
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
  const write = (text: string): boolean => {
    if (over || res.writableEnded || res.destroyed) return false;
    if (res.writableLength > maxBufferedBytes) {
      over = true;
      const buffered = res.writableLength;
      res.destroy();
      onOverflow?.(buffered);
      return false;
    }
    open();
    res.write(text);
    return true;
  };
  return {
    event: (name, data) => write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`),
    comment: (text) => write(`: ${text}\n\n`),
    close(reason) {
      write(`event: closed\ndata: ${JSON.stringify({ reason })}\n\n`);
      over = true;
      if (!res.writableEnded && !res.destroyed) res.end();
    },
  };
}
