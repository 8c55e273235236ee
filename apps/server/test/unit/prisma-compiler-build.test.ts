// The Prisma client loads the query compiler built for size: its WebAssembly is kept in the heap
// as base64 text for the life of the process (prisma/schema.prisma says what it saves).
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const generatedClass = fileURLToPath(new URL("../../src/generated/prisma/internal/class.ts", import.meta.url));

describe("the Prisma query compiler", () => {
  it("when the client is generated, then it loads the size-optimized compiler, never the fast build's 4.4 MB string", () => {
    const source = readFileSync(generatedClass, "utf8");
    expect(source).toContain("query_compiler_small_bg.postgresql.wasm-base64");
    expect(source).not.toContain("query_compiler_fast_bg");
  });
});
