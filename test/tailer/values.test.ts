import { expect } from 'chai';
import pg from 'pg';
import { TypeRegistry } from '../../src/tailer/types.js';
import { renderNumber } from '../../src/tailer/values.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

// Every value must come out exactly as Postgres's own to_jsonb renders it. The reference is
// Postgres itself: for each literal we ask for its text (what pgoutput sends) and its to_jsonb,
// render the text (the type's output function, via format('%s'), as pgoutput sends it), and compare both as jsonb text (canonical; numerics keep their digits).

const CASES: Array<[type: string, literals: string[]]> = [
  ['int2', ['0', '-32768', '32767']],
  ['int4', ['-5', '2147483647']],
  ['int8', ['9223372036854775807', '-9223372036854775808', '9007199254740993']],
  ['oid', ['4294967295']],
  ['numeric(40,20)', ['12345678901234567890.12345678901234567890', '-0.00000000000000000001', '1.5']],
  ['numeric', ['NaN', 'Infinity', '-Infinity', '1.50', '-0.001', '100000000000000000000000000000001', '0']],
  ['float4', ['1.5', '3.4e38', '1e-10', 'NaN', '-0', 'Infinity', '-1.17549435e-38']],
  ['float8', ['1e300', '5e-324', '0.1', '123456789.123', '-0', 'NaN', '-Infinity', '1e20', '1.5e-7', '-2.5e+21']],
  ['bool', ['true', 'false']],
  ['text', ['hello "world"\n\\ tab\t', 'é€😀', '', 'NULL', '{"not":"json"}']],
  ['varchar(10)', ['short']],
  ['char(5)', ['ab']],
  ['json', ['{"a": [1, 2.50, {"b": null}], "c": "x"}', '[1e2, -0.0, 12345678901234567890]', '"s"', 'null', '3.0']],
  ['jsonb', ['{"x": 12345678901234567890.123, "y": [true, {"z": "é"}]}', '[]', '{}']],
  ['date', ['2024-02-29', 'infinity', '-infinity', '0044-03-15 BC', '10000-01-01']],
  ['timestamp', ['2024-01-02 03:04:05.123456', '2024-01-02 03:04:05', 'infinity', '-infinity', '0044-03-15 10:00 BC']],
  [
    'timestamptz',
    ['2024-01-02 03:04:05.5+05:30', '2024-06-01 00:00:00+00', '1900-01-01 12:00:00+00', 'infinity', '0001-01-01 00:00:00+00 BC'],
  ],
  ['time', ['13:14:15.5']],
  ['timetz', ['13:14:15+02']],
  ['interval', ['1 year 2 mons 3 days 04:05:06.7', '-1 day']],
  ['uuid', ['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11']],
  ['bytea', ['\\x00ff10', '']],
  ['inet', ['192.168.0.1/24', '::1']],
  ['point', ['(1.5,2)']],
  ['bit(3)', ['101']],
  ['int4[]', ['{1,2,NULL}', '{}', '{{1,2},{3,4}}', '[0:1]={7,8}']],
  ['text[]', ['{"a b","c,d","\\"q\\"",NULL,"NULL","back\\\\slash",""}']],
  ['numeric[]', ['{1.50,NaN,-0.001}']],
  ['float8[]', ['{1e20,-0,Infinity}']],
  ['bool[]', ['{t,f,NULL}']],
  ['jsonb[]', ['{"{\\"a\\": 1}","[1, 2]"}']],
  ['timestamptz[]', ['{"2024-01-02 03:04:05+00",infinity}']],
  ['date[]', ['{2024-01-01,NULL}']],
  ['uuid[]', ['{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}']],
];

describe('values render as to_jsonb renders them', () => {
  let db: TestDatabase;
  let client: pg.Client;
  let types: TypeRegistry;

  before(async () => {
    db = await createTestDatabase();
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
    // What the replication connection does (src/tailer/tailer.ts).
    await client.query('SET DateStyle = ISO');
    await client.query(`
      CREATE TYPE mood AS ENUM ('happy', 'sad');
      CREATE DOMAIN money_amount AS numeric(12,2);
      CREATE DOMAIN tags AS text[];
      CREATE TYPE address AS (street text, number int, extra jsonb, at timestamptz, codes int[]);
    `);
    types = new TypeRegistry(client);
  });
  after(async () => {
    await client.end();
    await db.drop();
  });

  async function check(type: string, literal: string, timeZone = 'UTC'): Promise<void> {
    await client.query(`SET TimeZone = '${timeZone}'`);
    const { rows } = await client.query<{ oid: number; text: string | null; expected: string }>(
      `SELECT pg_typeof(v)::oid::int AS oid, format('%s', v) AS text, to_jsonb(v)::text AS expected FROM (SELECT $1::${type} AS v) x`,
      [literal],
    );
    const { oid, text, expected } = rows[0]!;
    await types.resolve([oid]);
    const fragment = types.renderFor(oid)(text!);
    const actual = (await client.query<{ t: string }>('SELECT $1::jsonb::text AS t', [fragment])).rows[0]!.t;
    expect(actual, `${type} ${JSON.stringify(literal)} (text ${JSON.stringify(text)}, rendered ${fragment})`).to.equal(expected);
  }

  for (const [type, literals] of CASES) {
    it(type, async () => {
      for (const literal of literals) await check(type, literal);
    });
  }

  it('timestamptz in zones with odd offsets (minutes, seconds, negative)', async () => {
    for (const zone of ['Asia/Kathmandu', 'America/St_Johns', 'Europe/Amsterdam', 'Pacific/Chatham']) {
      for (const literal of ['2024-01-02 03:04:05.25+00', '1900-01-01 12:00:00+00', '1850-06-01 00:00:00+00']) {
        await check('timestamptz', literal, zone);
      }
    }
  });

  it('domains, enums and composite types', async () => {
    await check('mood', 'happy');
    await check('money_amount', '12.50');
    await check('tags', '{x,"y z"}');
    await check('address', '("Main \\"St\\"",42,"{""k"": 1.50}","2024-01-02 03:04:05+00","{1,2}")');
    await check('address', '(,,,,)');
    await check('address[]', '{"(a,1,,,)",NULL}');
  });

  it('expands float exponents into plain decimals', () => {
    expect(renderNumber('1e+20')).to.equal('100000000000000000000');
    expect(renderNumber('1.5e-07')).to.equal('0.00000015');
    expect(renderNumber('-2.5e+21')).to.equal('-2500000000000000000000');
    expect(renderNumber('-0')).to.equal('0');
    expect(renderNumber('NaN')).to.equal('"NaN"');
  });
});
