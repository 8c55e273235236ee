// Running commands in the CI checks: each line logged as it starts, any failure fatal with the
// end of its output. `runAsync` for whatever talks to a server running in the same process (a
// synchronous child would block its event loop); both answer the command's stdout.
import { spawn, spawnSync } from "node:child_process";

export function commands(name, root) {
  const log = (msg) => process.stdout.write(`${name}: ${msg}\n`);
  const fail = (msg) => {
    process.stderr.write(`${name}: FAILED: ${msg}\n`);
    process.exit(1);
  };
  const where = (opts) => (opts?.cwd && opts.cwd !== root ? `   (in ${opts.cwd})` : "");
  const run = (cmd, args, opts = {}) => {
    log(`$ ${[cmd, ...args].join(" ")}${where(opts)}`);
    const r = spawnSync(cmd, args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], ...opts });
    if (r.status !== 0) fail(`exited ${r.status}:\n${(r.stdout + r.stderr).slice(-4000)}`);
    return r.stdout;
  };
  const runAsync = async (cmd, args, opts = {}) => {
    log(`$ ${[cmd, ...args].join(" ")}${where(opts)}`);
    const child = spawn(cmd, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"], ...opts });
    let out = "";
    let err = "";
    child.stdout.on("data", (c) => (out += c));
    child.stderr.on("data", (c) => (err += c));
    const [code] = await new Promise((r) => child.on("close", (...a) => r(a)));
    if (code !== 0) fail(`exited ${code}:\n${(out + err).slice(-4000)}`);
    return out;
  };
  return { log, fail, run, runAsync };
}
