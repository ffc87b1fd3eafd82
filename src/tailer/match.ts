import type { SubscriptionSpec } from './subscriptions.js';

/** A decoded row: column names and their JSON fragments (see values.ts), in table order. */
export interface Row {
  names: readonly string[];
  fragments: readonly string[];
  indexOf: ReadonlyMap<string, number>;
}

function normaliseDecimal(s: string): string {
  let [int = '', frac = ''] = s.replace(/^-/, '').split('.');
  int = int.replace(/^0+(?=\d)/, '');
  frac = frac.replace(/0+$/, '');
  const body = frac ? `${int}.${frac}` : int;
  return s.startsWith('-') && body !== '0' ? `-${body}` : body;
}

const JSON_NUMBER = /^-?\d+(\.\d+)?$/;

/** Equality of a column's fragment and a filter value; numbers compare by value (10 = 10.00). */
function fragmentEquals(fragment: string, value: unknown): boolean {
  if (value === null) return fragment === 'null';
  if (typeof value === 'boolean') return fragment === String(value);
  if (typeof value === 'string') return fragment === JSON.stringify(value);
  if (typeof value === 'number') {
    if (!JSON_NUMBER.test(fragment)) return false;
    // Filter numbers arrive through JSON.parse; render them without exponent for the comparison.
    const v = Number.isInteger(value) ? BigInt(value).toString() : String(value);
    return /e/i.test(v) ? Number(fragment) === value : normaliseDecimal(fragment) === normaliseDecimal(v);
  }
  return false;
}

/** True when every filter field equals the row's value (a missing column never matches). */
export function matchesFilter(filter: SubscriptionSpec['filter'], row: Row): boolean {
  if (!filter) return true;
  for (const [column, value] of Object.entries(filter)) {
    const i = row.indexOf.get(column);
    if (i === undefined || !fragmentEquals(row.fragments[i]!, value)) return false;
  }
  return true;
}
