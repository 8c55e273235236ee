import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Router } from "express";

/**
 * The reference page and the public contract, read once when the app is built: the files are
 * build artifacts (npm run docs), so no request does any rendering or bundling.
 */
export function docsRoutes(docsDir: string): Router {
  const read = (name: string): Buffer => {
    try {
      return readFileSync(join(docsDir, name));
    } catch {
      throw new Error(`${join(docsDir, name)} is missing: build it with \`npm run docs\` (npm start and npm run build do).`);
    }
  };
  const html = read("index.html");
  const json = read("openapi.public.json");
  const yaml = read("openapi.public.yaml");
  const router = Router({ caseSensitive: true, strict: false });
  router.get("/docs", (_req, res) => {
    res.type("text/html; charset=utf-8").send(html);
  });
  router.get("/openapi.json", (_req, res) => {
    res.type("application/json; charset=utf-8").send(json);
  });
  router.get("/openapi.yaml", (_req, res) => {
    res.type("application/yaml; charset=utf-8").send(yaml);
  });
  return router;
}
