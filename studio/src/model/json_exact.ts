// JSON as rankd writes it, read without losing integers: ids are 64-bit, and JSON.parse rounds an
// integer beyond 2^53 to the nearest double (9007199254740993 reads as ...992). This reader gives
// such an integer as a bigint and every other value as JSON.parse does, so the page shows and
// sends back the exact id. A number with a fraction or an exponent is a double, as in JSON.parse.

/** A JSON value with integers beyond Number.MAX_SAFE_INTEGER as bigints. */
export type ExactJson = null | boolean | number | bigint | string | ExactJson[] | { [key: string]: ExactJson };

class JsonSyntaxError extends SyntaxError {}

/** Parses `text` as JSON; throws SyntaxError as JSON.parse does. */
export function parseJsonExact(text: string): ExactJson {
  let i = 0;
  const fail = (what: string): never => {
    throw new JsonSyntaxError(`${what} at position ${i} of the JSON`);
  };
  const space = () => {
    while (i < text.length && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r")) i++;
  };
  const value = (depth: number): ExactJson => {
    if (depth > 512) fail("nesting too deep");
    space();
    const c = text[i];
    if (c === "{") {
      i++;
      const out: { [key: string]: ExactJson } = {};
      space();
      if (text[i] === "}") {
        i++;
        return out;
      }
      for (;;) {
        space();
        if (text[i] !== '"') fail("expected a member name");
        const key = string();
        space();
        if (text[i++] !== ":") fail("expected ':'");
        // Own data property even for "__proto__", as JSON.parse makes it.
        Object.defineProperty(out, key, { value: value(depth + 1), enumerable: true, writable: true, configurable: true });
        space();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i++] !== "}") fail("expected ',' or '}'");
        return out;
      }
    }
    if (c === "[") {
      i++;
      const out: ExactJson[] = [];
      space();
      if (text[i] === "]") {
        i++;
        return out;
      }
      for (;;) {
        out.push(value(depth + 1));
        space();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i++] !== "]") fail("expected ',' or ']'");
        return out;
      }
    }
    if (c === '"') return string();
    if (text.startsWith("true", i)) return (i += 4), true;
    if (text.startsWith("false", i)) return (i += 5), false;
    if (text.startsWith("null", i)) return (i += 4), null;
    return number();
  };
  const string = (): string => {
    // From the opening quote to the closing one, escapes included: JSON.parse decodes it.
    const start = i++;
    while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    if (i >= text.length) fail("unterminated string");
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const number = (): number | bigint => {
    const m = /-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
    m.lastIndex = i;
    const found = m.exec(text);
    if (!found) fail("unexpected character");
    const token = (found as RegExpExecArray)[0];
    i += token.length;
    const n = Number(token);
    if (found![2] === undefined && found![3] === undefined && !Number.isSafeInteger(n)) return BigInt(token);
    return n;
  };
  const out = value(0);
  space();
  if (i !== text.length) fail("unexpected text after the value");
  return out;
}

/** An integer's decimal text as the reader gives it: a number when safe, else a bigint. */
export function exactInteger(text: string): number | bigint {
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : BigInt(text);
}

/** JSON text of a value read by parseJsonExact, as JSON.stringify writes it but with bigints as their digits (JSON.stringify throws on them). */
export function stringifyExact(value: unknown): string {
  if (typeof value === "bigint") return value.toString();
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined || typeof v === "function" ? "null" : stringifyExact(v))).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const members = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined && typeof v !== "function")
      .map(([k, v]) => `${JSON.stringify(k)}:${stringifyExact(v)}`);
    return `{${members.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
