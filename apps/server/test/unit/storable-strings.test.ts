import { describe, expect, it } from "vitest";
import { unstorable, unstorableStrings } from "../../src/http/storable-strings.js";

describe("unstorable", () => {
  it.each([["plain"], [""], ["😀"], ["a\ud83d\ude00b"], ["é\u202e\u00a0"], ["\u0001\u001f"]])("when %j is checked, then it can be stored", (value) => {
    expect(unstorable(value)).toBeUndefined();
  });

  it.each([["\u0000", /NUL/], ["a\u0000", /NUL/], ["\ud800", /surrogate/], ["a\ud83d", /surrogate/], ["\ude00b", /surrogate/], ["\ude00\ud83d", /surrogate/]])(
    "when %j is checked, then it cannot be stored",
    (value, why) => {
      expect(unstorable(value)).toMatch(why);
    },
  );
});

describe("unstorableStrings", () => {
  it("when a document holds unstorable values and keys at any depth, then each is named by its dotted path", () => {
    const doc = { a: "ok", b: ["x", "y\u0000"], c: { d: { "k\ud800": "v", e: "\udc00" } } };
    expect(unstorableStrings(doc)).toEqual([
      { name: "b.1", message: expect.stringMatching(/NUL/) },
      { name: "c.d", message: expect.stringMatching(/^a property name .*surrogate/) },
      { name: "c.d.e", message: expect.stringMatching(/surrogate/) },
    ]);
  });

  it("when the document is itself an unstorable string, then it is named body", () => {
    expect(unstorableStrings("\u0000")).toEqual([{ name: "body", message: expect.stringMatching(/NUL/) }]);
  });
});

describe("unstorableStrings on any depth", () => {
  it("when a document nests 100,000 levels, then the walk finishes and names the deep string (no recursion)", () => {
    let doc: unknown = "\u0000";
    for (let i = 0; i < 100_000; i++) doc = [doc];
    const [issue] = unstorableStrings(doc);
    expect(issue!.name.split(".")).toHaveLength(100_000);
  });
});
