// Captures real pgoutput messages for the decoder's unit tests (test/unit/fixtures/pgoutput.json).
//
//   npx tsc -p tsconfig.json && node dist/scripts/capture-pgoutput-fixtures.js
//
// It starts a throw-away embedded Postgres (wal_level=logical, track_commit_timestamp=on), makes a
// table of many types (REPLICA IDENTITY FULL) and one with the default identity, runs INSERT,
// UPDATE (one leaving a TOASTed value unchanged, one changing the key), DELETE and TRUNCATE, and
// saves for every transaction:
// - the raw messages (hex) the pgoutput plugin wrote, read twice: through a replication stream
//   (START_REPLICATION, as the tailer reads them), and through pg_logical_slot_peek_binary_changes,
//   which also gives each message's LSN and xid; the script stops if the two differ;
// - what the unit tests compare the decoder with, taken from Postgres itself, not from walgate:
//   each row's to_jsonb and each column's text (what pgoutput sends), the xid, the commit time,
//   the relation's oid and columns, and the pg_type/pg_attribute rows of every column type.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { LogicalReplicationService } from 'pg-logical-replication';
import { startEmbeddedPostgres } from '../src/core/db/embedded.js';
import type { PgType } from '../src/tailer/types.js';

const OUT = fileURLToPath(new URL('../../test/unit/fixtures/pgoutput.json', import.meta.url));
const SLOT = 'capture_slot';
const PUBLICATION = 'capture_pub';
// The replication connection of the tailer sets DateStyle=ISO; a zone with a half-hour offset
// shows that offsets keep their minutes.
const SESSION = { DateStyle: 'ISO', TimeZone: 'Asia/Kolkata' };
const OPTIONS = Object.entries(SESSION)
  .map(([k, v]) => `-c ${k}=${v}`)
  .join(' ');

const SCHEMA = `
  CREATE TYPE mood AS ENUM ('happy', 'sad');
  CREATE DOMAIN positive_amount AS numeric(30,10) CHECK (VALUE > 0);
  CREATE TYPE address AS (street text, number int, tags text[], at timestamptz, extra jsonb);
  CREATE TABLE kitchen_sink (
    id bigint PRIMARY KEY,
    amount numeric,
    price positive_amount,
    counter int4,
    small int2,
    ratio float8,
    flag boolean,
    happened timestamptz,
    local_time timestamp,
    day date,
    doc json,
    docb jsonb,
    scores int4[],
    labels text[],
    moments timestamptz[],
    home address,
    feeling mood,
    raw bytea,
    uid uuid,
    note text,
    big text,
    nothing text
  );
  -- Out of line and uncompressed, so that big is TOASTed whatever its content.
  ALTER TABLE kitchen_sink ALTER COLUMN big SET STORAGE EXTERNAL;
  ALTER TABLE kitchen_sink REPLICA IDENTITY FULL;
  CREATE TABLE keyed (id int PRIMARY KEY, big text, n int);
  ALTER TABLE keyed ALTER COLUMN big SET STORAGE EXTERNAL;
  CREATE PUBLICATION ${PUBLICATION} FOR TABLE kitchen_sink, keyed;
`;

const BIG = `(SELECT string_agg(md5(i::text), '') FROM generate_series(1, 200) i)`; // 6400 characters

interface Step {
  name: string;
  sql: string;
  /** The rows each change touches, in the order Postgres writes them. */
  changes: Array<{ table: 'kitchen_sink' | 'keyed'; operation: 'INSERT' | 'UPDATE' | 'DELETE'; id: string; newId?: string }>;
  truncate?: string[];
}

const STEPS: Step[] = [
  {
    name: 'insert two rows, one with every type set, one mostly NULL; and a keyed row',
    sql: `
      INSERT INTO kitchen_sink VALUES (
        9007199254740993,
        '-123456789012345678901234567890.123456789012345678901234567890',
        '12345678901234567890.0123456789',
        -2147483648, 32767,
        1e20,
        true,
        '2024-02-29 23:59:59.123456+00',
        '1999-12-31 23:59:59.5',
        '0044-03-15 BC',
        '{"b": [1, 2.50, {"c": null}], "a": "x", "n": 12345678901234567890.123}',
        '{"z": true, "y": [1.0, "é€😀"], "x": {"w": -0.001}}',
        '{1,NULL,-3}',
        ARRAY['a b', 'c,d', '"q"', NULL, 'NULL', 'back\\slash', ''],
        ARRAY['2024-01-02 03:04:05+00'::timestamptz, 'infinity'],
        ROW('Main "St", 1', 42, ARRAY['x', 'y z'], '2024-06-01 12:00:00+02', '{"k": [1, {"v": 2.5}]}')::address,
        'happy',
        '\\x00ff10',
        'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
        E'line one\\nline "two"\\ttab \\\\ é€😀',
        ${BIG},
        NULL
      );
      INSERT INTO kitchen_sink (id, ratio, happened, note) VALUES (2, 'NaN', 'infinity', '');
      INSERT INTO keyed VALUES (1, ${BIG}, 1);`,
    changes: [
      { table: 'kitchen_sink', operation: 'INSERT', id: '9007199254740993' },
      { table: 'kitchen_sink', operation: 'INSERT', id: '2' },
      { table: 'keyed', operation: 'INSERT', id: '1' },
    ],
  },
  {
    name: 'update leaving the TOASTed big unchanged (REPLICA IDENTITY FULL: the old row has it)',
    sql: `UPDATE kitchen_sink SET counter = counter + 1, docb = docb || '{"added": 1}', nothing = 'now set' WHERE id = 9007199254740993`,
    changes: [{ table: 'kitchen_sink', operation: 'UPDATE', id: '9007199254740993' }],
  },
  {
    name: 'update leaving the TOASTed big unchanged (default identity: no old row)',
    sql: `UPDATE keyed SET n = n + 1 WHERE id = 1`,
    changes: [{ table: 'keyed', operation: 'UPDATE', id: '1' }],
  },
  {
    name: 'update changing the key (default identity: the old key is sent)',
    sql: `UPDATE keyed SET id = 2, big = 'short now' WHERE id = 1`,
    changes: [{ table: 'keyed', operation: 'UPDATE', id: '1', newId: '2' }],
  },
  {
    name: 'delete with the full old row, and with the key only',
    sql: `DELETE FROM kitchen_sink WHERE id = 2; DELETE FROM keyed WHERE id = 2`,
    changes: [
      { table: 'kitchen_sink', operation: 'DELETE', id: '2' },
      { table: 'keyed', operation: 'DELETE', id: '2' },
    ],
  },
  {
    name: 'truncate both tables',
    sql: `TRUNCATE kitchen_sink, keyed`,
    changes: [],
    truncate: ['kitchen_sink', 'keyed'],
  },
];

// Single values, rendered without a table: each literal's text output and its to_jsonb.
const VALUES: Array<[type: string, literals: string[]]> = [
  ['int2', ['-32768', '32767']],
  ['int4', ['0', '-2147483648']],
  ['int8', ['9223372036854775807', '-9223372036854775808', '9007199254740993']],
  [
    'numeric',
    [
      'NaN',
      'Infinity',
      '-Infinity',
      '1.50',
      '-0.001',
      '0.000',
      '100000000000000000000000000000001',
      '-123456789012345678901234567890.123456789012345678901234567890',
    ],
  ],
  ['numeric(40,20)', ['1.5', '-0.00000000000000000001']],
  ['float4', ['1.5', '3.4e38', '1e-10', '-0', 'NaN', 'Infinity', '-1.17549435e-38']],
  ['float8', ['1e300', '5e-324', '0.1', '123456789.123', '-0', '1e20', '1.5e-7', '-2.5e+21', '-Infinity']],
  ['bool', ['true', 'false']],
  ['text', ['hello "world"\n\\ tab\t', 'é€😀', '', 'NULL', '{"not":"json"}', '\u0001 control']],
  ['varchar(10)', ['short']],
  ['char(5)', ['ab']],
  ['json', ['{"a": [1, 2.50, {"b": null}], "c": "x"}', '"s"', 'null', '3.0', '[]']],
  ['jsonb', ['{"x": 12345678901234567890.123, "y": [true, {"z": "é"}]}', '[]', '{}', '-0.0']],
  ['date', ['2024-02-29', 'infinity', '-infinity', '0044-03-15 BC', '10000-01-01']],
  ['timestamp', ['2024-01-02 03:04:05.123456', '2024-01-02 03:04:05', 'infinity', '0044-03-15 10:00 BC']],
  [
    'timestamptz',
    ['2024-01-02 03:04:05.5+05:30', '2024-06-01 00:00:00+00', '1900-01-01 12:00:00+00', '-infinity', '0001-01-01 00:00:00+00 BC'],
  ],
  ['time', ['13:14:15.5']],
  ['timetz', ['13:14:15+02']],
  ['interval', ['1 year 2 mons 3 days 04:05:06.7', '-1 day']],
  ['uuid', ['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11']],
  ['bytea', ['\\x00ff10', '']],
  ['inet', ['192.168.0.1/24', '::1']],
  ['point', ['(1.5,2)']],
  ['bit(3)', ['101']],
  ['mood', ['sad']],
  ['positive_amount', ['0.5']],
  ['int4[]', ['{1,2,NULL}', '{}', '{{1,2},{3,4}}', '[0:1]={7,8}']],
  ['text[]', ['{"a b","c,d","\\"q\\"",NULL,"NULL","back\\\\slash",""}']],
  ['numeric[]', ['{1.50,NaN,-0.001}']],
  ['float8[]', ['{1e20,-0,Infinity}']],
  ['bool[]', ['{t,f,NULL}']],
  ['jsonb[]', ['{"{\\"a\\": 1}","[1, 2]"}']],
  ['timestamptz[]', ['{"2024-01-02 03:04:05+00",infinity}']],
  ['date[]', ['{2024-01-01,NULL}']],
  ['point[]', ['{"(1,2)","(3,4)"}']],
  ['address', ['("a, \\"b\\"",1,"{x,y}","2024-01-02 03:04:05+00","{\\"k\\": 1}")', '(,,,,)']],
  ['address[]', ['{"(x,1,{},,)",NULL}']],
];

type Client = pg.Client;

interface CapturedRow {
  jsonb: string;
  text: Record<string, string | null>;
}

async function rowOf(db: Client, table: string, id: string): Promise<CapturedRow | null> {
  // to_jsonb of the row (what the payload must render) and each column's text output, by the
  // type's output function (what pgoutput sends; a plain ::text cast would spell booleans out).
  const { rows } = await db.query<{ jsonb: string }>(`SELECT to_jsonb(t)::text AS jsonb FROM ${table} t WHERE id = $1`, [id]);
  if (rows.length === 0) return null;
  const text: Record<string, string | null> = {};
  for (const c of await columnsOf(db, table)) {
    const col = pg.escapeIdentifier(c.name);
    const r = await db.query<{ v: string; isnull: boolean }>(
      `SELECT format('%s', ${col}) AS v, ${col} IS NULL AS isnull FROM ${table} WHERE id = $1`,
      [id],
    );
    text[c.name] = r.rows[0]!.isnull ? null : r.rows[0]!.v;
  }
  return { jsonb: rows[0]!.jsonb, text };
}

async function columnsOf(db: Client, table: string) {
  const { rows } = await db.query<{ name: string; typeOid: number; isKey: boolean }>(
    `SELECT a.attname AS name, a.atttypid::int AS "typeOid",
            EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisprimary AND a.attnum = ANY(i.indkey)) AS "isKey"
       FROM pg_attribute a WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
    [table],
  );
  return rows;
}

/** The pg_type rows of the given types and of everything they are built from, and composite attributes. */
async function catalogOf(db: Client, oids: number[]) {
  const types = new Map<number, PgType & { typname: string }>();
  const attributes: Record<string, Array<{ name: string; typeOid: number }>> = {};
  let todo = [...new Set(oids)];
  while (todo.length > 0) {
    const { rows } = await db.query<PgType & { typname: string }>(
      `SELECT oid::int, typname, typtype, typelem::int, typbasetype::int, typdelim, typlen, typrelid::int FROM pg_type WHERE oid = ANY($1::oid[])`,
      [todo],
    );
    const next: number[] = [];
    for (const t of rows) {
      types.set(t.oid, t);
      if (t.typtype === 'd') next.push(t.typbasetype);
      if (t.typelem !== 0) next.push(t.typelem);
      if (t.typtype === 'c') {
        const attrs = await db.query<{ name: string; typeOid: number }>(
          `SELECT attname AS name, atttypid::int AS "typeOid" FROM pg_attribute WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
          [t.typrelid],
        );
        attributes[String(t.typrelid)] = attrs.rows;
        next.push(...attrs.rows.map((a) => a.typeOid));
      }
    }
    todo = [...new Set(next)].filter((o) => !types.has(o));
  }
  return { types: [...types.values()].sort((a, b) => Number(a.oid) - Number(b.oid)), attributes };
}

/** Reads the slot through the replication protocol, as the tailer does, until `count` messages came. */
async function streamMessages(url: string, count: number): Promise<string[]> {
  const got: string[] = [];
  const service = new LogicalReplicationService(
    { connectionString: url, options: OPTIONS, application_name: 'capture' },
    { acknowledge: { auto: false, timeoutSeconds: 0 } },
  );
  const plugin = {
    get name() {
      return 'pgoutput';
    },
    parse: (b: Buffer) => b.toString('hex'),
    start: (client: pg.Client, slot: string, lsn: string) =>
      client.query(`START_REPLICATION SLOT "${slot}" LOGICAL ${lsn} (proto_version '1', publication_names '${PUBLICATION}')`),
  };
  const done = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`stream gave ${got.length} of ${count} messages`)), 30_000);
    service.on('data', (_lsn: string, hex: string) => {
      got.push(hex);
      if (got.length === count) {
        clearTimeout(timer);
        resolve();
      }
    });
    service.on('error', reject);
  });
  void service.subscribe(plugin as never, SLOT).catch(() => undefined);
  await done;
  await service.stop();
  return got;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'walgate-capture-'));
  const cluster = await startEmbeddedPostgres({ dir, database: 'capture', settings: { track_commit_timestamp: 'on', fsync: 'off' } });
  const db = new pg.Client({ connectionString: cluster.url, options: OPTIONS });
  await db.connect();
  try {
    const version = (await db.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]!.v;
    await db.query(SCHEMA);
    await db.query(`SELECT pg_create_logical_replication_slot('${SLOT}', 'pgoutput')`);

    const relations: Record<string, unknown> = {};
    const typeOids: number[] = [];
    for (const table of ['kitchen_sink', 'keyed']) {
      const columns = await columnsOf(db, table);
      const { rows } = await db.query<{ oid: number; identity: string }>(
        `SELECT oid::int, relreplident AS identity FROM pg_class WHERE oid = $1::regclass`,
        [table],
      );
      relations[table] = {
        oid: rows[0]!.oid,
        schema: 'public',
        name: table,
        replicaIdentity: { f: 'full', d: 'default' }[rows[0]!.identity],
        columns,
      };
      typeOids.push(...columns.map((c) => c.typeOid));
    }

    const transactions = [];
    for (const step of STEPS) {
      await db.query('BEGIN');
      const before: Array<CapturedRow | null> = [];
      for (const c of step.changes) before.push(c.operation === 'INSERT' ? null : await rowOf(db, c.table, c.id));
      await db.query(step.sql);
      const after: Array<CapturedRow | null> = [];
      for (const c of step.changes) after.push(c.operation === 'DELETE' ? null : await rowOf(db, c.table, c.newId ?? c.id));
      const xid = Number((await db.query<{ xid: string }>('SELECT pg_current_xact_id()::text AS xid')).rows[0]!.xid);
      await db.query('COMMIT');
      const micros = (
        await db.query<{ us: string }>(
          `SELECT (extract(epoch FROM pg_xact_commit_timestamp($1::text::xid)) * 1000000)::bigint::text AS us`,
          [xid],
        )
      ).rows[0]!.us;
      transactions.push({
        name: step.name,
        sql: step.sql.trim(),
        xid,
        commitTimeMicros: micros,
        changes: step.changes.map((c, i) => ({ table: c.table, operation: c.operation, old: before[i], new: after[i] })),
        truncate: step.truncate ?? null,
      });
    }

    // Each message with the LSN logical decoding gives it (the commit's is the end of the commit record).
    const peeked = await db.query<{ lsn: string; xid: string; data: Buffer }>(
      `SELECT lsn::text, xid::text, data FROM pg_logical_slot_peek_binary_changes('${SLOT}', NULL, NULL, 'proto_version', '1', 'publication_names', '${PUBLICATION}')`,
    );
    const streamed = await streamMessages(cluster.url, peeked.rows.length);
    const messages = peeked.rows.map((r, i) => {
      const hex = r.data.toString('hex');
      if (streamed[i] !== hex) throw new Error(`message ${i} differs between the stream and the SQL interface`);
      return { lsn: r.lsn, xid: Number(r.xid), hex };
    });
    // Split the messages by transaction (each begins with 'B').
    let t = -1;
    const byTransaction: Array<typeof messages> = transactions.map(() => []);
    for (const m of messages) {
      if (m.hex.startsWith('42')) t++;
      byTransaction[t]!.push(m);
    }
    if (t !== transactions.length - 1) throw new Error(`expected ${transactions.length} transactions, read ${t + 1}`);
    for (const [i, tx] of transactions.entries())
      if (byTransaction[i]![0]!.xid !== tx.xid) throw new Error(`transaction ${i}: xid mismatch`);

    const values = [];
    // Zoned values once more in UTC, whose offset Postgres prints without minutes (`+00`).
    const zones = (type: string) => (/timestamptz|address/.test(type) ? [SESSION.TimeZone, 'UTC'] : [SESSION.TimeZone]);
    for (const [type, literals] of VALUES) {
      for (const timeZone of zones(type)) {
        await db.query(`SET TimeZone = '${timeZone}'`);
        for (const literal of literals) {
          const { rows } = await db.query<{ oid: number; text: string; jsonb: string }>(
            `SELECT pg_typeof(v)::oid::int AS oid, format('%s', v) AS text, to_jsonb(v)::text AS jsonb FROM (SELECT $1::${type} AS v) x`,
            [literal],
          );
          values.push({ type, literal, timeZone, ...rows[0]! });
          typeOids.push(rows[0]!.oid);
        }
      }
    }
    await db.query(`SET TimeZone = '${SESSION.TimeZone}'`);

    const fixture = {
      about: 'Captured by scripts/capture-pgoutput-fixtures.ts; regenerate with it, do not edit by hand.',
      postgres: version,
      session: SESSION,
      relations,
      catalog: await catalogOf(db, typeOids),
      transactions: transactions.map((tx, i) => ({ ...tx, messages: byTransaction[i] })),
      values,
    };
    await writeFile(OUT, JSON.stringify(fixture, null, 2) + '\n');
    console.log(`wrote ${messages.length} messages in ${transactions.length} transactions to ${path.relative(process.cwd(), OUT)}`);
  } finally {
    await db.query(`SELECT pg_drop_replication_slot('${SLOT}')`).catch(() => undefined);
    await db.end();
    await cluster.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
