import { compileFilter, type CompiledFilter, type FilterInput } from './filter/compile.js';
import type { ValueKind } from './filter/kinds.js';

/** A decoded row: column names and their JSON fragments (see values.ts), in table order. */
export interface Row {
  names: readonly string[];
  fragments: readonly string[];
  indexOf: ReadonlyMap<string, number>;
  /**
   * How filters compare each column (filter/kinds.ts), from the table's types; absent (a backfill
   * page), each value is typed by its JSON form.
   */
  kinds?: readonly ValueKind[];
}

// Compiled once per filter document: a subscription's spec (and so its filter object) is replaced
// as a whole when it changes (subscriptions.ts), so the document's identity is the cache key.
const compiled = new WeakMap<object, CompiledFilter>();

function compiledFor(filter: object): CompiledFilter {
  let f = compiled.get(filter);
  if (!f) {
    f = compileFilter(filter);
    compiled.set(filter, f);
  }
  return f;
}

/** Whether a change meets a subscription's filter (docs/filters.md); no filter takes every change. */
export function filterMatches(filter: object | null | undefined, change: FilterInput): boolean {
  return filter == null || compiledFor(filter)(change);
}

/** Whether a row meets a filter, as a row read by a backfill (no old row, nothing changed). */
export function matchesFilter(filter: object | null | undefined, row: Row): boolean {
  return filterMatches(filter, { operation: 'READ', record: row, old: null });
}
