// Summarises a V8 .cpuprofile (from node --cpu-prof): self time by function and by package, so
// a profile can be quoted as evidence without opening DevTools.
import { readFileSync } from "node:fs";

function where(url) {
  if (!url) return "(native/V8)";
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const rest = url.slice(nm + 13).split("/");
    return rest[0].startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (url.startsWith("node:")) return "node:" + url.slice(5).split("/")[0];
  const m = /apps\/server\/dist\/(.*)$/.exec(url);
  if (m) return `server:${m[1]}`;
  return url.replace(/^file:\/\//, "");
}

export function summariseProfile(path, top = 25) {
  const profile = JSON.parse(readFileSync(path, "utf8"));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const dt = profile.timeDeltas;
  for (let i = 0; i < profile.samples.length; i++) {
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + (dt[i] ?? 0));
  }
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const fns = new Map();
  const pkgs = new Map();
  for (const [id, us] of self) {
    const n = byId.get(id);
    const cf = n.callFrame;
    const fnKey = `${cf.functionName || "(anonymous)"} ${where(cf.url)}${cf.url ? `:${cf.lineNumber + 1}` : ""}`;
    fns.set(fnKey, (fns.get(fnKey) ?? 0) + us);
    const pk = cf.url ? where(cf.url).replace(/^server:.*/, "server") : cf.functionName.startsWith("(") ? cf.functionName : "(native/V8)";
    pkgs.set(pk, (pkgs.get(pk) ?? 0) + us);
  }
  const pct = (us) => ((100 * us) / total).toFixed(1).padStart(5) + " %";
  const sorted = (m) => [...m.entries()].sort((a, b) => b[1] - a[1]);
  return {
    totalMs: total / 1000,
    functions: sorted(fns).slice(0, top).map(([k, us]) => `${pct(us)}  ${k}`),
    packages: sorted(pkgs).slice(0, 15).map(([k, us]) => `${pct(us)}  ${k}`),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const s = summariseProfile(process.argv[2], Number(process.argv[3] ?? 30));
  console.log(`total sampled: ${s.totalMs.toFixed(0)} ms\n\nself time by package:\n${s.packages.join("\n")}\n\nself time by function:\n${s.functions.join("\n")}`);
}
