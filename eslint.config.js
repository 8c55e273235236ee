// ESLint for the whole workspace (`npm run lint`). Besides the recommended rules, it states the
// server's architecture as import boundaries, so a layer violation fails CI instead of waiting
// for a reviewer:
//
//   routes, http, cli, main   (edge: HTTP and the command line)
//   metrics                   (the Prometheus registry: fed by the edge and the engine's observer, reads repos at scrape)
//   services                  (use cases; know nothing of HTTP)
//   delivery                  (the engine; the only user of the sender)
//   housekeeping              (partitions, retention, expired rows; beside the engine)
//   presenters                (stored row → API object; pure)
//   repos, db                 (the only code that touches Prisma or SQL)
//   domain                    (the delivery rules, each decided once: pure, no I/O; the engine and repos apply them)
//   contract                  (the one reader of openapi.yaml: parses, resolves $refs, matches paths)
//   lib, net, clock           (leaf utilities; import no layer; clock is the one source of time)
//
// A layer imports only layers below it. Type-only imports of Prisma's generated row types are
// allowed everywhere, because types are erased and the row shape is the contract between layers.
import js from "@eslint/js";
import globals from "globals";
import { defineConfig } from "eslint/config";
import tseslint from "typescript-eslint";

const SERVER = "apps/server/src";

// Regexes over the import specifier. Relative imports reach a layer as `../<layer>/…` (or
// `./<layer>/…` from the src root, `../../<layer>/…` from a subfolder), so anchoring on
// `./<layer>/` covers them all, and a folder of the same name inside another layer
// (`domain/delivery/`) is not mistaken for the layer.
const layer = (name) => `(^|/)\\.\\.?/${name}/`;
const PRISMA = ["(^|/)generated/prisma/", "^@prisma/", "^pglite-prisma-adapter$"];
const SENDER = ["(^|/)delivery/sender(\\.js)?$"];
// Only contract/ parses the contract or compiles its paths: one interpretation, one set of internals.
const CONTRACT_READER = {
  regex: "^(yaml|path-to-regexp|@apidevtools/json-schema-ref-parser)$",
  message: "only contract/ reads openapi.yaml, resolves its references and matches its paths: ask contract/contract.ts",
};

/** One `no-restricted-imports` setting per directory: flat config replaces, not merges, rule
 * options, so each directory's entry lists every rule that applies to it. */
function boundaries(files, { layers = [], prisma = true, sender = true, contractReader = false, extra = [] }) {
  const patterns = [
    ...layers.map((name) => ({
      regex: layer(name),
      message: `this layer must not import ${name}/ (see the layer diagram in eslint.config.js)`,
    })),
    ...(prisma
      ? [{ regex: PRISMA.join("|"), allowTypeImports: true, message: "only repos/ and db/ touch Prisma at run time; import row types with `import type`" }]
      : []),
    ...(sender ? [{ regex: SENDER.join("|"), message: "only delivery/ sends webhooks" }] : []),
    ...(contractReader ? [] : [CONTRACT_READER]),
    ...extra,
  ];
  return { files, rules: { "@typescript-eslint/no-restricted-imports": ["error", { patterns }] } };
}

const EDGE = ["routes", "http", "cli"];

export default defineConfig(
  {
    ignores: [
      "**/dist/**",
      "**/node_modules/**",
      "**/generated/**",
      "**/test-results/**",
      "openapi/dist/**",
      "out/**",
      ".data/**",
      ".turbo/**",
      "**/.turbo/**",
      // Compiled by CI outside the repository against the packed client tarballs (tsc --strict).
      "scripts/ci/ts-consumer/**",
    ],
  },
  js.configs.recommended,
  {
    files: ["**/*.{js,mjs,cjs}"],
    languageOptions: { globals: { ...globals.node } },
  },
  {
    files: ["**/*.ts"],
    extends: [tseslint.configs.recommended],
    languageOptions: {
      parserOptions: {
        project: [
          "./apps/server/tsconfig.test.json",
          "./packages/client/tsconfig.test.json",
          "./packages/api-types/tsconfig.test.json",
          "./packages/test-kit/tsconfig.json",
          "./scripts/tsconfig.json",
        ],
        tsconfigRootDir: import.meta.dirname,
      },
      globals: { ...globals.node },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: { arguments: false } }],
      // A type assertion tells the compiler to trust us; parse or narrow instead. `as const` stays.
      "@typescript-eslint/consistent-type-assertions": ["error", { assertionStyle: "never" }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" }],
      // Express's documented way to type `req` is augmenting `namespace Express` in `declare global`.
      "@typescript-eslint/no-namespace": ["error", { allowDeclarations: true }],
    },
  },
  {
    // The webhook portal's page runs in the browser (apps/portal): the same typed rules, with the DOM's globals.
    files: ["apps/portal/src/**/*.{ts,tsx}"],
    extends: [tseslint.configs.recommended],
    languageOptions: {
      parserOptions: { project: ["./apps/portal/tsconfig.json"], tsconfigRootDir: import.meta.dirname },
      globals: { ...globals.browser },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: { arguments: false, attributes: false } }],
      "@typescript-eslint/consistent-type-assertions": ["error", { assertionStyle: "never" }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" }],
    },
  },
  {
    // Input hygiene (docs/api-decisions.md#input-hygiene) matches control characters on purpose: PostgreSQL cannot store
    // NUL, and C0 controls are refused in labels and URLs. The rule exists to catch accidental ones.
    rules: { "no-control-regex": "off" },
  },
  {
    // Tests may narrow a parsed body to the type they then assert on field by field: a wrong
    // narrowing fails the test's own expectations, which is the run-time check the rule asks for.
    // Object literals still may not be asserted into a type (that would hide a missing field).
    files: ["**/test/**/*.ts", "packages/test-kit/**/*.ts"],
    rules: {
      "@typescript-eslint/consistent-type-assertions": ["error", { assertionStyle: "as", objectLiteralTypeAssertions: "never" }],
    },
  },

  // The server's layers, lowest first; files no layer rule names still may not read the contract.
  boundaries([`${SERVER}/**/*.ts`], { prisma: false, sender: false }),
  boundaries([`${SERVER}/contract/**/*.ts`], {
    contractReader: true,
    layers: ["domain", "db", "repos", "presenters", "delivery", "services", ...EDGE, "metrics"],
  }),
  boundaries([`${SERVER}/lib/**/*.ts`, `${SERVER}/net/**/*.ts`, `${SERVER}/clock/**/*.ts`], {
    layers: ["contract", "domain", "db", "repos", "presenters", "delivery", "services", ...EDGE, "metrics", "housekeeping"],
  }),
  // Decides, never reads or writes: what it needs is handed in, what it decides is handed back.
  boundaries([`${SERVER}/domain/**/*.ts`], {
    layers: ["contract", "db", "repos", "presenters", "delivery", "housekeeping", "services", ...EDGE, "metrics", "net"],
  }),
  boundaries([`${SERVER}/db/**/*.ts`], {
    prisma: false,
    layers: ["contract", "domain", "repos", "presenters", "delivery", "services", ...EDGE, "metrics"],
  }),
  boundaries([`${SERVER}/repos/**/*.ts`], {
    prisma: false,
    layers: ["contract", "presenters", "delivery", "services", ...EDGE, "metrics"],
  }),
  boundaries([`${SERVER}/presenters/**/*.ts`], {
    layers: ["contract", "db", "repos", "delivery", "services", ...EDGE, "metrics"],
  }),
  boundaries([`${SERVER}/delivery/**/*.ts`], { sender: false, layers: ["contract", "presenters", "services", ...EDGE, "metrics"] }),
  boundaries([`${SERVER}/services/**/*.ts`], { layers: ["contract", "delivery", "housekeeping", ...EDGE, "metrics"] }),
  // The engine reports to metrics through its observer callbacks (delivery/observer.ts), never the reverse.
  boundaries([`${SERVER}/metrics/**/*.ts`], { layers: ["contract", "presenters", "services", ...EDGE] }),
  // beside the engine: never the sender, metrics or the layers above
  boundaries([`${SERVER}/housekeeping/**/*.ts`], { layers: ["contract", "presenters", "services", ...EDGE, "metrics"] }),
  boundaries([`${SERVER}/http/**/*.ts`], { layers: ["db", "repos", "delivery", "routes", "cli"] }),
  boundaries([`${SERVER}/routes/**/*.ts`], { layers: ["db", "repos", "delivery", "cli"] }),
  boundaries([`${SERVER}/config.ts`], { layers: ["db", "repos", "presenters", "delivery", "services", ...EDGE] }),
  // The worker role and what it starts from load no HTTP: the `worker` process is the engine alone.
  boundaries([`${SERVER}/worker.ts`, `${SERVER}/start-options.ts`, `${SERVER}/deps.ts`], {
    // the composition root wires the sender and the database, as before
    prisma: false,
    sender: false,
    layers: EDGE,
    extra: [{ regex: "^\\./(server|app)(\\.js)?$", message: "the worker role must not load the HTTP server (it is the engine alone)" }],
  }),
  // One clock judges time (clock/, kept in step with the database's): the layers that judge or
  // stamp time take it from the clock they are given, never from this host's wall clock.
  {
    files: [`${SERVER}/{repos,domain,delivery,housekeeping,services}/**/*.ts`],
    rules: {
      "no-restricted-syntax": [
        "error",
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: "take the time from the injected clock (clock/), not this host's wall clock" },
        { selector: "MemberExpression[object.name='Date'][property.name='now']", message: "take the time from the injected clock (clock/), not this host's wall clock" },
      ],
    },
  },
);
