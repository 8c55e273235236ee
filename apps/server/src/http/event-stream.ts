// A Server-Sent Events response (text/event-stream). Nothing is written until the first event, so
// a request refused before that still answers with a problem.
import type { Response } from "express";

export interface EventStream {
  event(name: string, data: unknown): void;
  comment(text: string): void;
  end(): void;
}

export function eventStream(res: Response): EventStream {
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
  const write = (text: string) => {
    if (res.writableEnded) return;
    open();
    res.write(text);
  };
  return {
    event: (name, data) => write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`),
    comment: (text) => write(`: ${text}\n\n`),
    end: () => {
      if (!res.writableEnded) res.end();
    },
  };
}
