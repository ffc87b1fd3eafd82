// A `$path` into a json/jsonb value, walked on the value's JSON text: only the bytes up to the
// wanted value are scanned, nothing is built, and the value found is returned as its own text —
// so a number deep in a document keeps every digit (JSON.parse would round it to a double).
// The text is what Postgres rendered (jsonb) or stored (json, which it validated): well formed.

const isWs = (c: number) => c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d;

function skipWs(t: string, i: number): number {
  while (i < t.length && isWs(t.charCodeAt(i))) i++;
  return i;
}

/** The index just past the string that starts at `i` (at its quote). */
function skipString(t: string, i: number): number {
  for (i++; i < t.length; i++) {
    const c = t.charCodeAt(i);
    if (c === 0x5c) i++;
    else if (c === 0x22) return i + 1;
  }
  return t.length;
}

/** The index just past the value that starts at `i`; nesting is counted, not recursed into. */
function skipValue(t: string, i: number): number {
  const c = t.charCodeAt(i);
  if (c === 0x22) return skipString(t, i);
  if (c !== 0x7b && c !== 0x5b) {
    for (let d = t.charCodeAt(i); i < t.length && !isWs(d) && d !== 0x2c && d !== 0x5d && d !== 0x7d; d = t.charCodeAt(++i));
    return i;
  }
  let depth = 0;
  for (; i < t.length; i++) {
    const d = t.charCodeAt(i);
    if (d === 0x22) i = skipString(t, i) - 1;
    else if (d === 0x7b || d === 0x5b) depth++;
    else if (d === 0x7d || d === 0x5d) {
      if (--depth === 0) return i + 1;
    }
  }
  return t.length;
}

function keyAt(t: string, start: number, end: number): string {
  const raw = t.slice(start, end);
  if (!raw.includes('\\')) return raw.slice(1, -1);
  try {
    return JSON.parse(raw) as string;
  } catch {
    return raw;
  }
}

/**
 * The text of the value at `path` in a JSON text, or undefined when the path leads nowhere. Array
 * elements are addressed by a whole number (or its digits as a string, as Postgres's `#>` does);
 * of an object key given twice (json keeps both), the last one counts, as with Postgres's `->`.
 */
export function jsonAt(text: string, path: readonly (string | number)[]): string | undefined {
  let start = skipWs(text, 0);
  let end = skipValue(text, start);
  for (const step of path) {
    const open = text.charCodeAt(start);
    let found: [number, number] | undefined;
    if (open === 0x7b) {
      const key = String(step);
      let i = skipWs(text, start + 1);
      while (i < end && text.charCodeAt(i) === 0x22) {
        const keyEnd = skipString(text, i);
        const name = keyAt(text, i, keyEnd);
        const valueStart = skipWs(text, skipWs(text, keyEnd) + 1); // past ':'
        const valueEnd = skipValue(text, valueStart);
        if (name === key) found = [valueStart, valueEnd];
        i = skipWs(text, valueEnd);
        if (text.charCodeAt(i) === 0x2c) i = skipWs(text, i + 1);
      }
    } else if (open === 0x5b) {
      const index = typeof step === 'number' ? step : /^\d{1,9}$/.test(step) ? Number(step) : -1;
      if (index < 0) return undefined;
      let i = skipWs(text, start + 1);
      for (let k = 0; i < end && text.charCodeAt(i) !== 0x5d; k++) {
        const valueEnd = skipValue(text, i);
        if (k === index) {
          found = [i, valueEnd];
          break;
        }
        i = skipWs(text, valueEnd);
        if (text.charCodeAt(i) === 0x2c) i = skipWs(text, i + 1);
      }
    }
    if (!found) return undefined;
    [start, end] = found;
  }
  return text.slice(start, end);
}
