import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
// @ts-expect-error: a plain .mjs build script without declarations
import { shapeForGenerators } from "../scripts/public-bundle.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const contract = parse(readFileSync(join(root, "openapi/openapi.yaml"), "utf8"));
const bundle = JSON.parse(readFileSync(join(root, "openapi/dist/openapi.public.json"), "utf8"));

type Node = Record<string, unknown>;
function walk(node: unknown, visit: (n: Node) => void): void {
  if (Array.isArray(node)) return node.forEach((n) => walk(n, visit));
  if (node && typeof node === "object") {
    visit(node as Node);
    Object.values(node).forEach((n) => walk(n, visit));
  }
}

describe("the public bundle, shaped for other-language generators", () => {
  it("when the contract lists null in a nullable enum, then the bundle drops the literal and keeps nullable", () => {
    const contractNullEnums: Node[] = [];
    walk(contract, (n) => Array.isArray(n.enum) && n.enum.includes(null) && contractNullEnums.push(n));
    expect(contractNullEnums.length).toBeGreaterThan(0); // the construct exists, so this test can fail
    const left: Node[] = [];
    walk(bundle, (n) => Array.isArray(n.enum) && n.enum.includes(null) && left.push(n));
    expect(left).toEqual([]);
    const shaped = shapeForGenerators({ components: { schemas: { S: { type: "string", nullable: true, enum: ["a", null] } } } });
    expect(shaped.components.schemas.S).toEqual({ type: "string", nullable: true, enum: ["a"] });
  });

  it("when the contract has a discriminated oneOf, then the bundle states it as one object requiring the discriminator with every value", () => {
    const unions: Node[] = [];
    walk(bundle, (n) => n.oneOf !== undefined && unions.push(n));
    expect(unions).toEqual([]);
    const auth = bundle.components.schemas.Authentication;
    expect(auth.required).toEqual(["type"]);
    expect(auth.properties.type.enum.sort()).toEqual(Object.keys(contract.components.schemas.Authentication.discriminator.mapping).sort());
    expect(Object.keys(auth.properties)).toEqual(expect.arrayContaining(["header_names", "username", "client_id", "token_url"]));
  });

  it("when shaping, then the input is left as it was", () => {
    const input = { components: { schemas: { S: { enum: ["a", null] } } } };
    shapeForGenerators(input);
    expect(input.components.schemas.S.enum).toEqual(["a", null]);
  });
});
