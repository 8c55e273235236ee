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

/** Every unstorable string (value or property name) in a parsed JSON document. */
export function unstorableStrings(value: unknown, path: string[] = []): StringIssue[] {
  const issues: StringIssue[] = [];
  const visit = (node: unknown, at: string[]): void => {
    if (typeof node === "string") {
      const why = unstorable(node);
      if (why) issues.push({ name: at.join(".") || "body", message: why });
    } else if (Array.isArray(node)) {
      node.forEach((item, i) => visit(item, [...at, String(i)]));
    } else if (node && typeof node === "object") {
      for (const [key, item] of Object.entries(node)) {
        const why = unstorable(key);
        if (why) issues.push({ name: at.join(".") || "body", message: `a property name ${why}` });
        visit(item, [...at, key]);
      }
    }
  };
  visit(value, path);
  return issues;
}
