import type { Queryable } from '../../core/db/pool.js';
import { PgCode, pgCode } from '../../core/db/pool.js';
import { qualified } from '../../core/db/identifiers.js';

// The record of a test event: one sample value per column, made by Postgres itself — a text typed
// into the column's type by its input function, then rendered with to_jsonb, the conversion that
// the tailer's payloads follow (tailer/values.ts). So a numeric arrives as a JSON number, an enum
// as one of its labels, an array as an array, exactly as a real INSERT of that table would carry
// them; guessing JSON from type names sent a numeric as "1.00" in tests and 19.9 in real traffic.

/** A column and its sample value as JSON text (a fragment, as the tailer stores values). */
export interface SampleColumn {
  name: string;
  json: string;
}

// The sample text of each column, chosen from the catalog: what the column's type accepts as
// input (an enum's first label, a length that fits varchar(n)); json columns get a JSON value.
// A type without a sample here gets NULL (it renders as null), as does a sample a domain refuses.
const SAMPLE_TEXTS = `
  WITH cols AS (
    SELECT a.attnum, a.attname, a.atttypmod, t.typcategory = 'A' AND t.typelem <> 0 AS is_array,
           CASE WHEN t.typcategory = 'A' AND t.typelem <> 0 THEN t.typelem ELSE t.oid END AS elem
      FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
     WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped
  ), base AS (
    SELECT c.*, b.oid AS type_oid, b.typname, b.typtype, b.typcategory
      FROM cols c
      JOIN pg_catalog.pg_type e ON e.oid = c.elem
      JOIN pg_catalog.pg_type b ON b.oid = CASE WHEN e.typtype = 'd' THEN e.typbasetype ELSE e.oid END
  )
  SELECT attname AS name, is_array AS "isArray", typname IN ('json', 'jsonb') AS "isJson",
         CASE
           WHEN typtype = 'e' THEN (SELECT l.enumlabel FROM pg_catalog.pg_enum l WHERE l.enumtypid = type_oid ORDER BY l.enumsortorder LIMIT 1)
           WHEN typname IN ('json', 'jsonb') THEN '{"sample": true}'
           WHEN typname = 'bool' THEN 'true'
           WHEN typname IN ('numeric', 'float4', 'float8', 'money') THEN '19.90'
           WHEN typcategory = 'N' THEN '1'
           WHEN typcategory = 'D' THEN 'now'
           WHEN typname = 'interval' THEN '1 hour'
           WHEN typname = 'uuid' THEN gen_random_uuid()::text
           WHEN typcategory = 'I' THEN '192.0.2.1'
           WHEN typname IN ('macaddr', 'macaddr8') THEN '08:00:2b:01:02:03'
           WHEN typcategory = 'V' THEN '1'
           WHEN typcategory = 'C' THEN '()'
           WHEN typcategory = 'R' THEN 'empty'
           WHEN typcategory = 'S' OR typname = 'bytea' THEN
             CASE WHEN typname IN ('varchar', 'bpchar') AND atttypmod > 4 THEN left('sample', atttypmod - 4) ELSE 'sample' END
         END AS text
    FROM base ORDER BY attnum`;

/** The sample record of `_messages` (no table: `prefix` text, `content` as the message's JSON). */
export function messageSample(columns: ReadonlyArray<{ name: string; type: string }>): SampleColumn[] {
  return columns.map((c) => ({ name: c.name, json: c.type === 'jsonb' ? '{"sample": true}' : '"sample"' }));
}

/** The sample record of a table, or undefined when the table is gone. */
export async function sampleRecord(db: Queryable, schema: string, table: string): Promise<SampleColumn[] | undefined> {
  const relation = qualified(schema, table);
  const texts = await db
    .query<{ name: string; isArray: boolean; isJson: boolean; text: string | null }>(SAMPLE_TEXTS, [relation])
    .catch((err: unknown) => {
      if (pgCode(err) === PgCode.undefinedTable) return undefined; // dropped meanwhile
      throw err;
    });
  if (!texts || texts.rows.length === 0) return undefined;
  // As jsonb_populate_record reads them: a JSON string goes through the type's input function,
  // a json column takes the JSON value itself.
  const inputs = texts.rows.map((c): [string, unknown] => {
    if (c.text === null) return [c.name, null];
    if (!c.isArray) return [c.name, c.isJson ? JSON.parse(c.text) : c.text];
    return [c.name, `{${JSON.stringify(c.text)}}`]; // a one-element array literal
  });
  const rendered = await renderAs(db, relation, inputs);
  return texts.rows.map((c) => ({ name: c.name, json: rendered.get(c.name) ?? 'null' }));
}

/**
 * The values typed into the table's row type and rendered by to_jsonb. A value its type or a
 * domain refuses (class 22 or 23) is left out, alone: the other columns keep their samples.
 */
async function renderAs(db: Queryable, relation: string, inputs: Array<[string, unknown]>): Promise<Map<string, string>> {
  const render = async (values: Array<[string, unknown]>) => {
    const { rows } = await db.query<{ key: string; value: string }>(
      `SELECT j.key, j.value::text AS value
         FROM jsonb_populate_record(NULL::${relation}, $1::jsonb) r, jsonb_each(to_jsonb(r)) j`,
      [JSON.stringify(Object.fromEntries(values))],
    );
    return new Map(rows.map((r) => [r.key, r.value]));
  };
  try {
    return await render(inputs);
  } catch (err) {
    if (!/^2[23]/.test(pgCode(err) ?? '')) throw err;
  }
  const kept = [];
  for (const input of inputs) {
    if (input[1] === null) continue;
    const ok = await render([input]).then(
      () => true,
      (err: unknown) => {
        if (!/^2[23]/.test(pgCode(err) ?? '')) throw err;
        return false;
      },
    );
    if (ok) kept.push(input);
  }
  return render(kept);
}
