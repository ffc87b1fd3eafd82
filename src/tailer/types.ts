import type { Queryable } from '../core/db/pool.js';
import {
  renderArray,
  renderBool,
  renderComposite,
  renderDate,
  renderJson,
  renderNumber,
  renderString,
  renderTimestamp,
  type Render,
} from './values.js';

// Which renderer a column type gets, decided the way to_jsonb decides (by the base type of a
// domain, by the element type of an array). Built-in types are known; others are looked up in
// pg_type once and remembered.

const BY_OID = new Map<number, Render>([
  [16, renderBool],
  [20, renderNumber], // int8
  [21, renderNumber], // int2
  [23, renderNumber], // int4
  [700, renderNumber], // float4
  [701, renderNumber], // float8
  [1700, renderNumber], // numeric
  [114, renderJson],
  [3802, renderJson],
  [1082, renderDate],
  [1114, renderTimestamp],
  [1184, renderTimestamp],
  [25, renderString], // text
  [1043, renderString], // varchar
  [2950, renderString], // uuid
]);

/** A pg_type row as the decoder reads it (the capture script and the unit fixtures use the same shape). */
export interface PgType {
  oid: number;
  typtype: string;
  typelem: number;
  typbasetype: number;
  typdelim: string;
  typlen: number;
  typrelid: number;
}

export class TypeRegistry {
  readonly #renders = new Map<number, Render>(BY_OID);
  /** Composite types resolved, with their attributes (name:type, in order) as they were then. */
  readonly #composites = new Map<number, string>();

  constructor(private readonly db: Queryable) {}

  /** Built-in types render the same forever; others may change (ALTER TYPE) and are checked. */
  isBuiltin(oid: number): boolean {
    return BY_OID.has(oid);
  }

  /**
   * Whether a composite type resolved earlier has changed since (ALTER TYPE … ADD, DROP or RENAME
   * ATTRIBUTE, or the type dropped): then everything but the built-in types is forgotten, to be
   * resolved again. Postgres sends no message for such a change, so the catalog is asked.
   */
  async changedSinceResolved(): Promise<boolean> {
    if (this.#composites.size === 0) return false;
    const { rows } = await this.db.query<{ oid: number; signature: string }>(
      `SELECT t.oid::int, string_agg(a.attname || ':' || a.atttypid, ',' ORDER BY a.attnum) AS signature
         FROM pg_catalog.pg_type t JOIN pg_catalog.pg_attribute a ON a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
        WHERE t.oid = ANY($1::oid[]) GROUP BY t.oid`,
      [[...this.#composites.keys()]],
    );
    const now = new Map(rows.map((r) => [r.oid, r.signature]));
    const changed = [...this.#composites].some(([oid, signature]) => now.get(oid) !== signature);
    if (changed) {
      this.#composites.clear();
      this.#renders.clear();
      for (const [oid, render] of BY_OID) this.#renders.set(oid, render);
    }
    return changed;
  }

  /** The renderer of a type already resolved (see `resolve`); strings for anything unknown. */
  renderFor(oid: number): Render {
    return this.#renders.get(oid) ?? renderString;
  }

  /** Looks up the types not known yet (and whatever they are built from). */
  async resolve(oids: number[]): Promise<void> {
    let missing = [...new Set(oids)].filter((o) => !this.#renders.has(o));
    const fetched = new Map<number, PgType>();
    const attributes = new Map<number, Array<{ name: string; typeOid: number }>>();
    // Fetch layer by layer: domains point at base types, arrays at elements, composites at attributes.
    while (missing.length > 0) {
      const { rows } = await this.db.query<PgType>(
        `SELECT oid::int, typtype, typelem::int, typbasetype::int, typdelim, typlen, typrelid::int
           FROM pg_catalog.pg_type WHERE oid = ANY($1::oid[])`,
        [missing],
      );
      const next: number[] = [];
      for (const t of rows) {
        fetched.set(t.oid, t);
        if (t.typtype === 'd') next.push(t.typbasetype);
        else if (t.typelem !== 0 && t.typlen === -1) next.push(t.typelem);
        else if (t.typtype === 'c') {
          const attrs = await this.db.query<{ name: string; typeOid: number }>(
            `SELECT attname AS name, atttypid::int AS "typeOid" FROM pg_catalog.pg_attribute
              WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
            [t.typrelid],
          );
          attributes.set(t.oid, attrs.rows);
          this.#composites.set(t.oid, attrs.rows.map((a) => `${a.name}:${a.typeOid}`).join(','));
          next.push(...attrs.rows.map((a) => a.typeOid));
        }
      }
      // A type that vanished (dropped since the change was written) renders as a string.
      for (const oid of missing) if (!fetched.has(oid)) this.#renders.set(oid, renderString);
      missing = [...new Set(next)].filter((o) => !this.#renders.has(o) && !fetched.has(o));
    }
    const build = (oid: number, seen: Set<number>): Render => {
      const known = this.#renders.get(oid);
      if (known) return known;
      const t = fetched.get(oid);
      if (!t || seen.has(oid)) return renderString;
      seen.add(oid);
      let render: Render;
      if (t.typtype === 'd') render = build(t.typbasetype, seen);
      else if (t.typelem !== 0 && t.typlen === -1) render = renderArray(build(t.typelem, seen), t.typdelim);
      else if (t.typtype === 'c') {
        const attrs = (attributes.get(oid) ?? []).map((a) => ({ name: a.name, render: build(a.typeOid, seen) }));
        render = renderComposite(attrs);
      } else render = renderString;
      this.#renders.set(oid, render);
      return render;
    };
    for (const oid of fetched.keys()) build(oid, new Set());
  }
}
