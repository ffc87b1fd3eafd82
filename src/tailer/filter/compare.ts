// Typed comparison of the values a filter meets: exact decimals (payload numbers keep every digit,
// values.ts, so they never pass through a JS number here), instants with microseconds, days, and
// text in Unicode code point order. Each parser returns undefined for text it does not read, so a
// value of an unexpected form compares as "not the same type" — never as an exception.

/** A finite decimal, normalised (no leading zeros in `int`, no trailing zeros in `frac`; zero has sign 0), or a special value. */
export type Decimal = { sign: -1 | 0 | 1; int: string; frac: string } | { special: 'nan' | 'inf' | '-inf' };

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;
const EXPONENT = /^(-?)(\d+)(?:\.(\d+))?[eE]([+-]?\d+)$/;

/** Reads a decimal's text (`-12.50`, `1e21` as JS prints big numbers, `NaN`, `Infinity`, `-Infinity`). */
export function parseDecimal(text: string): Decimal | undefined {
  if (text === 'NaN') return { special: 'nan' };
  if (text === 'Infinity') return { special: 'inf' };
  if (text === '-Infinity') return { special: '-inf' };
  let m = DECIMAL.exec(text);
  let sign: string, int: string, frac: string;
  if (m) {
    [, sign = '', int = '', frac = ''] = m;
  } else {
    m = EXPONENT.exec(text);
    if (!m) return undefined;
    const exp = Number(m[4]);
    // A filter value's exponent comes from a JS number (|exp| ≤ 324): bounded work.
    if (!Number.isSafeInteger(exp) || Math.abs(exp) > 400) return undefined;
    sign = m[1] ?? '';
    const digits = (m[2] ?? '') + (m[3] ?? '');
    const point = (m[2] ?? '').length + exp;
    if (point <= 0) [int, frac] = ['0', '0'.repeat(-point) + digits];
    else if (point >= digits.length) [int, frac] = [digits + '0'.repeat(point - digits.length), ''];
    else [int, frac] = [digits.slice(0, point), digits.slice(point)];
  }
  // Most values have neither a leading nor a trailing zero to strip: skip the regexes then.
  if (int.length > 1 && int.charCodeAt(0) === 48) int = int.replace(/^0+(?=\d)/, '');
  if (frac.length > 0 && frac.charCodeAt(frac.length - 1) === 48) frac = frac.replace(/0+$/, '');
  const zero = int === '0' && frac === '';
  return { sign: zero ? 0 : sign === '-' ? -1 : 1, int, frac };
}

/** The decimal a number written in JSON stands for (a JS number: at most 17 significant digits). */
export function decimalOfNumber(n: number): Decimal | undefined {
  return Number.isFinite(n) ? parseDecimal(String(n)) : undefined;
}

const SPECIAL_RANK = { '-inf': -1, inf: 1, nan: 2 } as const;

function compareMagnitude(a: { int: string; frac: string }, b: { int: string; frac: string }): number {
  if (a.int.length !== b.int.length) return a.int.length < b.int.length ? -1 : 1;
  if (a.int !== b.int) return a.int < b.int ? -1 : 1;
  if (a.frac === b.frac) return 0;
  // Without trailing zeros, the fractions compare as digit strings (a prefix is the smaller).
  return a.frac < b.frac ? -1 : 1;
}

/** Postgres's numeric order: -Infinity < every number < Infinity < NaN, and NaN = NaN. */
export function compareDecimal(a: Decimal, b: Decimal): number {
  const ra = 'special' in a ? SPECIAL_RANK[a.special] : 0;
  const rb = 'special' in b ? SPECIAL_RANK[b.special] : 0;
  if (ra !== 0 || rb !== 0) return ra === rb ? 0 : ra < rb ? -1 : 1;
  const x = a as Extract<Decimal, { sign: number }>;
  const y = b as Extract<Decimal, { sign: number }>;
  if (x.sign !== y.sign) return x.sign < y.sign ? -1 : 1;
  if (x.sign === 0) return 0;
  const m = compareMagnitude(x, y);
  return x.sign < 0 ? -m : m;
}

/** An instant: milliseconds since the epoch (±Infinity for Postgres's infinities) and the microseconds within. */
export interface Instant {
  ms: number;
  us: number;
}

// Howard Hinnant's days_from_civil: exact for any proleptic Gregorian date (Date.UTC maps years 0–99 to 19xx).
function daysFromCivil(y: number, m: number, d: number): number {
  y -= m <= 2 ? 1 : 0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function daysInMonth(y: number, m: number): number {
  if (m === 2) return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(m) ? 30 : 31;
}

// Postgres prints `2024-01-15T10:20:30.5+01:00`, `…+05:53:28` (historic offsets), `0044-03-15T00:00:00 BC`;
// people write `…Z` and `+0100`. Years beyond 9999 have more digits.
const TIMESTAMP = /^(\d{4,6})-(\d\d)-(\d\d)(?:[T ](\d\d):(\d\d)(?::(\d\d)(?:\.(\d{1,6}))?)?)?(Z|[+-]\d\d(?::?\d\d(?::?\d\d)?)?)?( BC)?$/;

export interface ParsedTime {
  instant: Instant;
  /** The date alone (no time of day written), in days since 1970-01-01. */
  day: number | undefined;
  hasOffset: boolean;
}

/** Reads an ISO 8601 timestamp or date (a value without offset reads as UTC); `infinity`/`-infinity` too. */
export function parseTime(text: string): ParsedTime | undefined {
  if (text === 'infinity' || text === '-infinity') {
    return { instant: { ms: text === 'infinity' ? Infinity : -Infinity, us: 0 }, day: undefined, hasOffset: false };
  }
  const m = TIMESTAMP.exec(text);
  if (!m) return undefined;
  const [, ys, mos, ds, hs, mis, ss = '0', fs = '', zone, bc] = m;
  let year = Number(ys);
  const month = Number(mos);
  const dayOfMonth = Number(ds);
  if (bc) year = 1 - year; // 1 BC is year 0
  if (month < 1 || month > 12 || dayOfMonth < 1 || dayOfMonth > daysInMonth(year, month)) return undefined;
  const hour = hs === undefined ? 0 : Number(hs);
  const minute = mis === undefined ? 0 : Number(mis);
  const second = Number(ss);
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetSeconds = 0;
  if (zone && zone !== 'Z') {
    const digits = zone.slice(1).replace(/:/g, '');
    const oh = Number(digits.slice(0, 2));
    const om = Number(digits.slice(2, 4) || '0');
    const os = Number(digits.slice(4, 6) || '0');
    if (oh > 15 || om > 59 || os > 59) return undefined;
    offsetSeconds = (zone[0] === '-' ? -1 : 1) * (oh * 3600 + om * 60 + os);
  }
  const day = daysFromCivil(year, month, dayOfMonth);
  const micros = Number(fs.padEnd(6, '0'));
  const ms = (((day * 24 + hour) * 60 + minute) * 60 + second - offsetSeconds) * 1000 + Math.floor(micros / 1000);
  return { instant: { ms, us: micros % 1000 }, day: hs === undefined && !zone ? day : undefined, hasOffset: zone !== undefined };
}

export function compareInstant(a: Instant, b: Instant): number {
  if (a.ms !== b.ms) return a.ms < b.ms ? -1 : 1;
  return a.us === b.us ? 0 : a.us < b.us ? -1 : 1;
}

/** Text order by Unicode code point (as Postgres's C collation): JS's `<` orders UTF-16 units, which puts U+E000–U+FFFF after astral characters. */
export function compareText(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs !== ys) return xs ? 1 : -1; // a surrogate starts a code point above U+FFFF
    return x < y ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** The string a JSON string fragment holds (the common case, no escapes, without a parse). */
export function stringOfFragment(fragment: string): string | undefined {
  if (fragment.length < 2 || fragment.charCodeAt(0) !== 34) return undefined;
  if (!fragment.includes('\\')) return fragment.slice(1, -1);
  try {
    const s: unknown = JSON.parse(fragment);
    return typeof s === 'string' ? s : undefined;
  } catch {
    return undefined;
  }
}
