// The service's log lines go to standard output in batches (src/lib/stdout-log.ts). Each case
// runs the logger in a child process whose standard output the test reads, as a log shipper would.
import { spawn, execFileSync } from "node:child_process";
import { closeSync, constants, mkdtempSync, openSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { LOG_FLUSH_MS } from "../../src/lib/stdout-log.js";

const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx/package.json").replace(/package\.json$/, "dist/loader.mjs")).href;
const probe = fileURLToPath(new URL("../harness/log-output-probe.ts", import.meta.url));

function start(args: string[], stdout: "pipe" | number) {
  const child = spawn(process.execPath, ["--import", tsx, probe, ...args], { stdio: ["ignore", stdout, "pipe"] });
  let err = "";
  const reports: Record<string, number>[] = [];
  const reported: ((r: Record<string, number>) => void)[] = [];
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    err += chunk;
    for (const m of chunk.matchAll(/^REPORT (.*)$/gm)) {
      const r = JSON.parse(m[1]!) as Record<string, number>;
      const waiting = reported.shift();
      if (waiting) waiting(r);
      else reports.push(r);
    }
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const report = () => (reports.length ? Promise.resolve(reports.shift()!) : new Promise<Record<string, number>>((resolve) => reported.push(resolve)));
  return { child, exited, report, stderr: () => err };
}

const linesOf = (text: string) => text.split("\n").filter(Boolean).map((l) => JSON.parse(l) as { seq: number; msg: string; service: string });

describe("log lines on standard output", () => {
  it("when the process is idle after a line, then the line shows within the flush interval, not at exit", async () => {
    const p = start(["idle"], "pipe");
    let firstAt = 0;
    let out = "";
    p.child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      firstAt ||= Date.now();
    });
    const { loggedAt } = await p.report();
    expect(await p.exited).toBe(0);
    expect(linesOf(out).map((l) => l.msg)).toEqual(["one line"]);
    // the process lives 3 s after the line: shown at exit, it would be ≈ 3,000 ms late
    expect(firstAt - loggedAt!).toBeLessThan(LOG_FLUSH_MS + 900);
  }, 20_000);

  it("when the process exits right after logging, then every line gathered is written, in order", async () => {
    const p = start(["exit", "20000"], "pipe");
    let out = "";
    p.child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    expect(await p.exited).toBe(0);
    const seqs = linesOf(out).map((l) => l.seq);
    expect(seqs).toHaveLength(20_000);
    expect(seqs.every((s, i) => s === i + 1)).toBe(true);
  }, 20_000);

  it("when nobody reads standard output, then the event loop keeps turning, lines past the bound are dropped and counted, and the rest arrive once it is read", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ars-stuck-log-"));
    const fifo = join(dir, "stdout");
    execFileSync("mkfifo", [fifo]);
    // a reader that holds the pipe open and reads nothing until told to
    const readFd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writeFd = openSync(fifo, "w");
    try {
      const p = start(["stuck"], writeFd);
      closeSync(writeFd);
      const r = await p.report();
      expect(r.dropped).toBeGreaterThan(0);
      expect(r.metric).toBe(r.dropped);
      // a write that waited on the pipe (sonic-boom's synchronous mode sleeps 100 ms per try) would show here
      expect(r.maxDelayMs).toBeLessThan(80);
      expect(p.stderr()).toMatch(/log lines dropped: standard output is not being read/);
      expect(p.stderr().match(/log lines dropped/g)).toHaveLength(1);
      // now drained: what was kept arrives, nothing but the dropped lines is missing
      let out = "";
      const reader = new Socket({ fd: readFd, readable: true, writable: false });
      const ended = new Promise((resolve) => reader.once("end", resolve));
      reader.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
      expect(await p.exited).toBe(0);
      await ended;
      const seqs = linesOf(out).map((l) => l.seq);
      expect(seqs.length).toBe(r.logged! - r.dropped!);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      expect(seqs[0]).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
