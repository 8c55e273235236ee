// The running server's local admin channel: a Unix domain socket in the data directory, mode
// 0600, through which CLI commands ask the server to act with its own database handle. PGlite is
// one process's database, so this is how a second process reaches it; each connection carries
// one JSON request line and gets one JSON answer line back.
import { once } from "node:events";
import { chmodSync, unlinkSync } from "node:fs";
import { createConnection, createServer, type Socket } from "node:net";
import { recordOf, stringOf, type JsonObject } from "../lib/narrow.js";

/** Far above any command's arguments: a peer streaming without a newline is cut off. */
const MAX_REQUEST_BYTES = 64 * 1024;

type Answer = { ok: true; result: unknown } | { ok: false; error: string };

export interface AdminSocket {
  path: string;
  close(): Promise<void>;
}

function readLine(socket: Socket, limit: number, onLine: (line: string) => void, onTooLong: () => void) {
  let buffered = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    buffered += chunk;
    const end = buffered.indexOf("\n");
    if (end >= 0) {
      socket.removeAllListeners("data");
      onLine(buffered.slice(0, end));
    } else if (buffered.length > limit) {
      socket.removeAllListeners("data");
      onTooLong();
    }
  });
}

/**
 * Listens on `path` (the caller holds the data directory's lock, so a socket file found there is
 * a dead server's and is replaced). `handle` answers a request or throws an error whose message is
 * shown to the command's user.
 */
export async function listenAdminSocket(
  path: string,
  handle: (request: unknown) => Promise<unknown>,
  describeError: (err: unknown) => string,
): Promise<AdminSocket> {
  try {
    unlinkSync(path);
  } catch {
    // nothing left behind
  }
  const open = new Set<Socket>();
  const server = createServer((socket) => {
    open.add(socket);
    socket.on("close", () => open.delete(socket));
    socket.on("error", () => socket.destroy());
    const answer = (a: Answer) => socket.end(`${JSON.stringify(a)}\n`);
    readLine(
      socket,
      MAX_REQUEST_BYTES,
      (line) => {
        let request: unknown;
        try {
          request = JSON.parse(line);
        } catch {
          answer({ ok: false, error: "admin socket: request is not JSON" });
          return;
        }
        handle(request).then(
          (result) => answer({ ok: true, result }),
          (err: unknown) => answer({ ok: false, error: describeError(err) }),
        );
      },
      () => answer({ ok: false, error: "admin socket: request too large" }),
    );
  });
  // The socket is created with mode 0600 (umask), so no other user can connect even briefly.
  const umask = process.umask(0o177);
  try {
    server.listen(path);
  } finally {
    process.umask(umask);
  }
  await once(server, "listening");
  chmodSync(path, 0o600);
  return {
    path,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of open) socket.destroy();
      await closed;
    },
  };
}

/** Sends one request to a running server's admin socket; its error answers reject with that message. */
export function callAdminSocket(path: string, request: unknown): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(path);
    let settled = false;
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      reject(err);
    };
    socket.on("error", (err: NodeJS.ErrnoException) =>
      fail(new Error(`cannot reach the running server's admin socket ${path} (${err.code ?? err.message})`)),
    );
    socket.on("connect", () => socket.write(`${JSON.stringify(request)}\n`));
    readLine(
      socket,
      Number.MAX_SAFE_INTEGER,
      (line) => {
        settled = true;
        socket.end();
        let answer: JsonObject;
        try {
          answer = recordOf(JSON.parse(line));
        } catch {
          reject(new Error("admin socket: the server's answer is not JSON"));
          return;
        }
        if (answer.ok === true) resolve(answer.result);
        else reject(new Error(stringOf(answer.error) ?? "admin socket: the server's answer has no error message"));
      },
      () => undefined,
    );
    socket.on("end", () => fail(new Error("the running server closed the admin socket without answering")));
  });
}
