import { expect } from 'chai';
import { TypeRegistry } from '../../../src/tailer/types.js';
import { capturedCatalog, exactJson, loadPgoutputFixture } from './fixture.js';

// Value rendering against Postgres's own to_jsonb, captured with each value's text output (what
// pgoutput sends) in test/unit/fixtures/pgoutput.json. Compared as parsed JSON whose numbers keep
// their exact digits: key order and spaces may differ, `1.50` and `1.5` may not.

const fixture = loadPgoutputFixture();

describe('unit: values render as to_jsonb renders them', () => {
  const types = new TypeRegistry(capturedCatalog(fixture));
  before(() => types.resolve(fixture.values.map((v) => v.oid)));

  it('covers the types it claims', () => {
    const covered = new Set(fixture.values.map((v) => v.type));
    for (const t of [
      'int8',
      'numeric',
      'float8',
      'bool',
      'json',
      'jsonb',
      'timestamptz',
      'date',
      'text[]',
      'address',
      'positive_amount',
      'mood',
      'bytea',
    ]) {
      expect(covered, t).to.include(t);
    }
  });

  for (const v of fixture.values) {
    it(`${v.type} ${JSON.stringify(v.literal)} (${v.timeZone}) → ${v.jsonb.length > 60 ? `${v.jsonb.slice(0, 57)}...` : v.jsonb}`, () => {
      const fragment = types.renderFor(v.oid)(v.text);
      expect(exactJson(fragment)).to.deep.equal(exactJson(v.jsonb));
    });
  }

  it('keeps every digit of a number (no trip through a JS number)', () => {
    const render = types.renderFor(1700);
    expect(render('12345678901234567890.12345678901234567890')).to.equal('12345678901234567890.12345678901234567890');
    expect(types.renderFor(20)('9007199254740993')).to.equal('9007199254740993');
  });

  it('renders a type the catalog does not know as a string of its text', async () => {
    const unknown = 999_999;
    await types.resolve([unknown]);
    expect(types.renderFor(unknown)('anything')).to.equal('"anything"');
  });
});
