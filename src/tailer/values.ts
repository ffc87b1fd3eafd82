// Renders column values, received as Postgres text output, the way `to_jsonb` renders them:
// booleans and numbers as JSON literals with every digit kept, json/jsonb embedded, dates and
// timestamps in ISO 8601 with a `T`, arrays and composites as JSON arrays and objects, anything
// else as a JSON string of its text. Each renderer returns JSON text (a "fragment"), so that
// numbers never pass through a JS number.

export type Render = (text: string) => string;

const quote = (s: string) => JSON.stringify(s);

export const renderString: Render = quote;

export const renderBool: Render = (t) => (t === 't' ? 'true' : 'false');

export const renderJson: Render = (t) => t;

const PLAIN_NUMBER = /^-?\d+(\.\d+)?$/;
const EXPONENT_NUMBER = /^(-?)(\d+)(?:\.(\d+))?[eE]([+-]?\d+)$/;

/**
 * to_jsonb turns a number's text into a jsonb numeric: exponents are expanded (float8 `1e+20`
 * becomes 100000000000000000000), `-0` becomes 0, and NaN/Infinity, which JSON cannot hold,
 * become strings.
 */
export const renderNumber: Render = (t) => {
  if (PLAIN_NUMBER.test(t)) return /^-0(\.0+)?$/.test(t) ? t.slice(1) : t;
  const m = EXPONENT_NUMBER.exec(t);
  if (!m) return quote(t); // NaN, Infinity, -Infinity
  const [, sign, int, frac = '', expText] = m;
  const digits = int! + frac;
  const point = int!.length + Number(expText);
  let out: string;
  if (point <= 0) out = `0.${'0'.repeat(-point)}${digits}`;
  else if (point >= digits.length) out = digits + '0'.repeat(point - digits.length);
  else out = `${digits.slice(0, point)}.${digits.slice(point)}`;
  out = out.replace(/^0+(?=\d)/, '');
  return sign && /[1-9]/.test(out) ? `-${out}` : out;
};

// With DateStyle=ISO (set on the replication connection) a timestamp reads
// `2024-01-15 10:20:30.5+01` and JSON wants `2024-01-15T10:20:30.5+01:00`.
const ISO_TIMESTAMP = /^(\d{4,}-\d\d-\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)([+-]\d\d(?::\d\d){0,2})?( BC)?$/;

export const renderTimestamp: Render = (t) => {
  const m = ISO_TIMESTAMP.exec(t);
  if (!m) return quote(t); // infinity, -infinity
  const [, date, time, zone, bc = ''] = m;
  const tz = zone === undefined ? '' : zone.length === 3 ? `${zone}:00` : zone;
  return quote(`${date}T${time}${tz}${bc}`);
};

/** Dates print the same in ISO and in JSON (a function of its own: filters tell dates from text by it, filter/kinds.ts). */
export const renderDate: Render = (t) => quote(t);

/** Splits the text of an array (`{1,"a b",NULL,{2,3}}`, maybe prefixed by `[0:2]=`) and renders each element. */
export function renderArray(element: Render, delimiter = ','): Render {
  return (t) => {
    let i = t.startsWith('[') ? t.indexOf('=') + 1 : 0;
    const parse = (): string => {
      if (t[i] !== '{') throw new Error(`malformed array literal: ${t}`);
      i++;
      const items: string[] = [];
      if (t[i] === '}') {
        i++;
        return '[]';
      }
      for (;;) {
        if (t[i] === '{') items.push(parse());
        else if (t[i] === '"') {
          let s = '';
          i++;
          while (t[i] !== '"') {
            if (t[i] === '\\') i++;
            s += t[i++];
            if (i > t.length) throw new Error(`malformed array literal: ${t}`);
          }
          i++;
          items.push(element(s));
        } else {
          let end = i;
          while (t[end] !== delimiter && t[end] !== '}') end++;
          const raw = t.slice(i, end).trim();
          i = end;
          items.push(raw.toUpperCase() === 'NULL' ? 'null' : element(raw));
        }
        if (t[i] === delimiter) i++;
        else if (t[i] === '}') {
          i++;
          return `[${items.join(',')}]`;
        } else throw new Error(`malformed array literal: ${t}`);
      }
    };
    return parse();
  };
}

/** Splits the text of a composite value (`(1,"a b",)`) and renders it as an object of its attributes. */
export function renderComposite(attributes: Array<{ name: string; render: Render }>): Render {
  return (t) => {
    if (t[0] !== '(' || t[t.length - 1] !== ')') return quote(t);
    const fields: Array<string | null> = [];
    let i = 1;
    while (i < t.length) {
      let value = '';
      let quoted = false;
      while (i < t.length - 1 && t[i] !== ',') {
        if (t[i] === '"') {
          quoted = true;
          i++;
          for (;;) {
            if (t[i] === '\\') value += t[++i];
            else if (t[i] === '"' && t[i + 1] === '"') value += t[i++];
            else if (t[i] === '"') break;
            else value += t[i];
            i++;
          }
          i++;
        } else value += t[i++];
      }
      fields.push(value === '' && !quoted ? null : value);
      i++; // past ',' or ')'
    }
    const parts = attributes.map((a, k) => {
      const v = fields[k];
      return `${quote(a.name)}:${v === null || v === undefined ? 'null' : a.render(v)}`;
    });
    return `{${parts.join(',')}}`;
  };
}
