import { isUtf8 } from "node:buffer";

/**
 * How deep a JSON body may nest (arrays and objects). The contract's deepest body nests 5 levels;
 * the limit leaves room without letting a body such as `[[[[…]]]]` reach code that walks it
 * (the schema validator, the string rule) with thousands of levels. Stated in the contract's
 * "Input rules" and in the README.
 */
export const MAX_JSON_DEPTH = 32;

/** What makes a JSON text unacceptable before it is parsed, or undefined when nothing does. */
export interface ShapeProblem {
  /** dotted path of the offending place (`authentication.headers`), `body` for the document */
  name: string;
  message: string;
}

interface Frame {
  /** the keys seen so far, for an object; null for an array */
  keys: Set<string> | null;
  /** this container's own name in its parent (a key, or an index) */
  segment: string;
  /** the next string is a property name */
  expectKey: boolean;
  lastKey: string;
  index: number;
}

function pathOf(stack: Frame[]): string {
  return stack.slice(1).map((f) => f.segment).join(".") || "body";
}

/**
 * One pass over the raw bytes, with an explicit stack (no recursion, whatever the input):
 * valid UTF-8 (JSON.parse would otherwise turn bad bytes into U+FFFD and store them), nesting at
 * most MAX_JSON_DEPTH, and no property name twice in one object (JSON.parse would silently keep
 * the last one, so two readers of the same body could disagree). Syntax is left to JSON.parse:
 * a malformed text stops the scan without a finding.
 */
export function jsonShapeProblem(bytes: Buffer, maxDepth = MAX_JSON_DEPTH): ShapeProblem | undefined {
  if (!isUtf8(bytes)) return { name: "body", message: "is not valid UTF-8" };
  const text = bytes.toString("utf8");
  const stack: Frame[] = [];
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      let end = i + 1;
      for (;;) {
        end = text.indexOf('"', end);
        if (end < 0) return undefined;
        let slashes = 0;
        while (text.charCodeAt(end - 1 - slashes) === 0x5c) slashes++;
        if (slashes % 2 === 0) break;
        end++;
      }
      const top = stack[stack.length - 1];
      if (top?.keys && top.expectKey) {
        const raw = text.slice(i, end + 1);
        let key: string;
        try {
          key = raw.includes("\\") ? String(JSON.parse(raw)) : raw.slice(1, -1);
        } catch {
          return undefined;
        }
        if (top.keys.has(key)) return { name: pathOf(stack), message: `has the property ${JSON.stringify(key.slice(0, 64))} more than once` };
        top.keys.add(key);
        top.lastKey = key;
        top.expectKey = false;
      }
      i = end;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (stack.length >= maxDepth) return { name: "body", message: `is nested more than ${maxDepth} levels deep` };
      const parent = stack[stack.length - 1];
      const segment = parent ? (parent.keys ? parent.lastKey : String(parent.index)) : "";
      stack.push({ keys: c === 0x7b ? new Set() : null, segment, expectKey: c === 0x7b, lastKey: "", index: 0 });
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
    } else if (c === 0x2c /* , */) {
      const top = stack[stack.length - 1];
      if (top?.keys) top.expectKey = true;
      else if (top) top.index++;
    }
  }
  return undefined;
}
