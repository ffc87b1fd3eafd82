import type { z } from 'zod';
import { validationError, violationsOf, type Violation } from '../core/errors.js';

/**
 * Parses a request part with its zod schema; failures become 400 VALIDATION_ERROR with
 * `violations`. Two things are refused before the schema sees them, wherever they are:
 * - a NUL character in a string or a key: Postgres text cannot hold U+0000, and such a value would
 *   otherwise fail deep in a query (a 500);
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

function refusedInput(value: unknown, at: string[]): Violation | undefined {
  if (typeof value === 'string') return value.includes('\0') ? { path: at.join('.') || '(body)', message: 'must not contain a NUL character' } : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  for (const [key, child] of Object.entries(value)) {
    const path = [...at, key].join('.');
    if (key.includes('\0')) return { path, message: 'must not contain a NUL character' };
    if (key === '__proto__') return { path, message: 'is not accepted as a name' };
    const found = refusedInput(child, [...at, key]);
    if (found) return found;
  }
  return undefined;
}
