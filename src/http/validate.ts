import type { z } from 'zod';
import { validationError, violationsOf, type Violation } from '../core/errors.js';

/**
 * Parses a request part with its zod schema; failures become 400 VALIDATION_ERROR with
 * `violations`. Two things are refused before the schema sees them, wherever they are:
 * - a NUL character in a string or a key: Postgres text cannot hold U+0000, and such a value would
 *   otherwise fail deep in a query (a 500);
 * - a lone surrogate (`"\ud800"` in JSON): not well-formed UTF-16, it has no UTF-8 form for Postgres
 *   either (a 500 too);
 * - a `__proto__` key: zod drops it without a word (so that it cannot replace a prototype), and a
 *   subscription's `filter: {"__proto__": …}` would become `{}` — matching every row.
 */
export function parse<S extends z.ZodType>(schema: S, value: unknown, message?: string): z.output<S> {
  const refused = refusedInput(value, []);
  if (refused) throw validationError([refused], message);
  const result = schema.safeParse(value);
  if (!result.success) throw validationError(violationsOf(result.error), message);
  return result.data;
}

/** A surrogate code unit without its pair (with the u flag a proper pair is one code point, not matched). */
const LONE_SURROGATE = /\p{Cs}/u;

/** Deeper than any request walgate takes; deeper input is refused rather than walked. */
const MAX_DEPTH = 32;

// Iterative, and bounded by MAX_DEPTH: a 100 KB body can nest 50,000 levels deep, which a
// recursive walk answered with a stack overflow (a 500) after quadratic work on the paths.
function refusedInput(value: unknown, at: string[]): Violation | undefined {
  const pending: Array<{ value: unknown; path: string[] }> = [{ value, path: at }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const here = next.path.join('.') || '(body)';
    if (typeof next.value === 'string') {
      if (next.value.includes('\0')) return { path: here, message: 'must not contain a NUL character' };
      if (LONE_SURROGATE.test(next.value)) return { path: here, message: 'must be well-formed Unicode (no lone surrogate)' };
      continue;
    }
    if (next.value === null || typeof next.value !== 'object') continue;
    if (next.path.length >= MAX_DEPTH) return { path: here, message: `is nested more than ${MAX_DEPTH} levels deep` };
    for (const [key, child] of Object.entries(next.value)) {
      const path = [...next.path, key];
      if (key.includes('\0')) return { path: path.join('.'), message: 'must not contain a NUL character' };
      if (LONE_SURROGATE.test(key)) return { path: path.join('.'), message: 'must be well-formed Unicode (no lone surrogate)' };
      if (key === '__proto__') return { path: path.join('.'), message: 'is not accepted as a name' };
      pending.push({ value: child, path });
    }
  }
  return undefined;
}
