/**
 * The one string rule: a string the service accepts must be one PostgreSQL can store and compare.
 * `text` refuses U+0000, and UTF-8 has no encoding for an unpaired UTF-16 surrogate (JSON's
 * `"\ud800"` parses to one), so either would reach the database as a 500. Checked once, for every
 * body string (keys included) and every query and path value, before any handler runs.
 */
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why `value` cannot be stored, or undefined when it can. */
export function unstorable(value: string): string | undefined {
  const m = UNSTORABLE.exec(value);
  if (!m) return undefined;
  return m[0] === "\u0000" ? "must not contain the NUL character (U+0000)" : "must not contain an unpaired UTF-16 surrogate";
}

export interface StringIssue {
  /** dotted path of the field (`filters.question_set_ids.0`), or the key's parent path for a bad key */
  name: string;
  message: string;
}

/** A place in the document as a chain to its parent: O(1) to extend, joined only for an issue. */
type Place = { parent: Place; segment: string } | null;
type Visit = { node: unknown; at: Place } | { badKey: string; at: Place };

function nameOf(at: Place, prefix: readonly string[]): string {
  const parts: string[] = [];
  for (let p = at; p; p = p.parent) parts.push(p.segment);
  return [...prefix, ...parts.reverse()].join(".") || "body";
}

/**
 * Every unstorable string (value or property name) in a parsed JSON document, in document order.
 * An explicit stack, not recursion: the walk is bounded by the document's size, never by the
 * call stack.
 */
export function unstorableStrings(value: unknown, path: readonly string[] = []): StringIssue[] {
  const issues: StringIssue[] = [];
  const stack: Visit[] = [{ node: value, at: null }];
  while (stack.length) {
    const visit = stack.pop()!;
    if ("badKey" in visit) {
      issues.push({ name: nameOf(visit.at, path), message: `a property name ${visit.badKey}` });
      continue;
    }
    const { node, at } = visit;
    if (typeof node === "string") {
      const why = unstorable(node);
      if (why) issues.push({ name: nameOf(at, path), message: why });
    } else if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push({ node: node[i], at: { parent: at, segment: String(i) } });
    } else if (node && typeof node === "object") {
      const entries = Object.entries(node);
      // pushed last first, so each name is looked at before its value, in document order
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, item] = entries[i]!;
        stack.push({ node: item, at: { parent: at, segment: key } });
        const why = unstorable(key);
        if (why) stack.push({ badKey: why, at });
      }
    }
  }
  return issues;
}
