// A proxy in front of a live server that adds a field to every JSON object of every JSON answer
// (bodies of lists, items, nested objects and problems alike), as a later version of the API may
// (the contract's "Compatibility and changes"). The client checks run through it a second time:
// a generated or packaged client that breaks on a field it does not know fails CI.
import http from "node:http";

export const ADDED_FIELD = "x_field_added_by_ci";

function withAddedField(value) {
  if (Array.isArray(value)) return value.map(withAddedField);
  if (value && typeof value === "object") {
    const out = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withAddedField(v)]));
    out[ADDED_FIELD] = { note: "a field this client does not know" };
    return out;
  }
  return value;
}

/** Starts the proxy for `upstreamUrl`; answers its URL, how many answers it changed, and close(). */
export async function startFieldAddingProxy(upstreamUrl) {
  const upstream = new URL(upstreamUrl);
  let changed = 0;
  const proxy = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      // identity: the answer is rewritten, so it must arrive uncompressed
      const headers = { ...req.headers, host: upstream.host, "accept-encoding": "identity" };
      const forward = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers }, (answer) => {
        const body = [];
        answer.on("data", (c) => body.push(c));
        answer.on("end", () => {
          let bytes = Buffer.concat(body);
          const outHeaders = { ...answer.headers };
          if (/json/.test(answer.headers["content-type"] ?? "") && bytes.length) {
            bytes = Buffer.from(JSON.stringify(withAddedField(JSON.parse(bytes.toString("utf8")))));
            outHeaders["content-length"] = String(bytes.length);
            delete outHeaders.etag;
            changed++;
          }
          res.writeHead(answer.statusCode, outHeaders);
          res.end(bytes);
        });
      });
      forward.on("error", (err) => res.destroy(err));
      forward.end(Buffer.concat(chunks));
    });
  });
  await new Promise((r) => proxy.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${proxy.address().port}`,
    changed: () => changed,
    close: () => new Promise((r) => proxy.close(r)),
  };
}
