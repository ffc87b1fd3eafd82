import { expect } from 'chai';
import { decodeAddress, encodeAddress, natsSubjectProblem, templateProblems } from '../../../src/delivery/destinations/address.js';
import { keyToken, messageTarget, rawMembers, rowKey } from '../../../src/delivery/destinations/row-key.js';

// `{key}` (docs/destinations.md): a row's primary-key values, one subject token per key column,
// whatever the values hold — a key can never add, remove or wildcard a token.

const body = (record: string) =>
  `{"id":"evt_1","timestamp":"2026-11-29T00:00:00.000Z","project_id":"p","environment":"master","table":"t","event":"INSERT","record":${record},"data":${record},"old_record":null,"changed_fields":[]}`;

describe('unit: the {key} placeholder', () => {
  it('is a known placeholder', () => {
    expect(templateProblems('a.{key}.{event}')).to.deep.equal([]);
    expect(templateProblems('a.{keys}')[0]).to.match(/unknown placeholder \{keys\}: only \{schema\}, \{table\}, \{event\} and \{key\}/);
  });

  it('escapes what would split, wildcard or blank a token, and % itself, so distinct values stay distinct', () => {
    expect(keyToken('42')).to.equal('42');
    expect(keyToken('a.b')).to.equal('a%2Eb');
    expect(keyToken('*')).to.equal('%2A');
    expect(keyToken('>')).to.equal('%3E');
    expect(keyToken('a b\tc\nd')).to.equal('a%20b%09c%0Ad');
    expect(keyToken('100%')).to.equal('100%25');
    expect(keyToken('%2E')).to.equal('%252E');
    expect(keyToken('\u00a0')).to.equal('%C2%A0'); // a no-break space is whitespace too
    expect(keyToken('')).to.equal('%00');
    expect(keyToken('ü-ñ_/:{}')).to.equal('ü-ñ_/:{}');
    for (const v of ['a.b', '*', '>', ' ', '', '.', 'x y.z*>', '\u0001']) {
      const subject = `s.${keyToken(v)}.INSERT`;
      expect(natsSubjectProblem(subject), v).to.equal(undefined);
      expect(subject.split('.'), v).to.have.length(3);
    }
  });

  it('reads the key from the record as the payload spells it: a bigint keeps its digits, strings are unquoted', () => {
    expect(rowKey(body('{"id":9007199254740993,"note":"x"}'), ['id'])).to.equal('9007199254740993');
    expect(rowKey(body('{"region":"eu.west","code":"A 1","n":{"a":[1,"}"]}}'), ['region', 'code'])).to.equal('eu%2Ewest.A%201');
    expect(rowKey(body('{"id":"a\\"b\\\\c"}'), ['id'])).to.equal('a"b\\c');
    expect(rowKey(body('{"id":true}'), ['id'])).to.equal('true');
    expect(rowKey(body('{"id":1.5}'), ['id'])).to.equal('1%2E5');
    expect((rowKey(body('{"note":"x"}'), ['id']) as Error).message).to.equal('{key}: the record has no key column "id"');
    expect((rowKey('{"events":[]}', ['id']) as Error).message).to.match(/carries no record/);
    expect(rawMembers('{ "a" : 1 , "b":"}" }')).to.deep.equal(
      new Map([
        ['a', '1'],
        ['b', '"}"'],
      ]),
    );
  });

  it('the key columns ride in the stored address, and each message fills its own key', () => {
    const a = { kind: 'nats' as const, destinationId: 'dst_1', subject: 'w.s.t.{event}.{key}', keyColumns: ['region', 'code,x'] };
    const decoded = decodeAddress(new URL(encodeAddress(a)))!;
    expect(decoded).to.deep.equal(a);
    expect(messageTarget(decoded, 'UPDATE', body('{"region":"eu","code,x":">"}'))).to.deep.equal({ subject: 'w.s.t.UPDATE.eu.%3E' });
    // No {key} in the template: no key columns, and the body is not read.
    const plain = decodeAddress(new URL(encodeAddress({ kind: 'nats', destinationId: 'd', subject: 'w.{event}' })))!;
    expect(plain).to.not.have.property('keyColumns');
    expect(messageTarget(plain, 'INSERT', 'not json')).to.deep.equal({ subject: 'w.INSERT' });
  });

  it('a routing key over 255 bytes once the key is in fails the attempt clearly, never truncated', () => {
    const a = { kind: 'rabbitmq' as const, destinationId: 'd', exchange: 'x', routingKey: 't.{key}', keyColumns: ['id'] };
    expect(messageTarget(a, 'INSERT', body('{"id":"abc"}'))).to.deep.equal({ exchange: 'x', routingKey: 't.abc' });
    const long = messageTarget(a, 'INSERT', body(`{"id":"${'k'.repeat(300)}"}`));
    expect(long).to.be.instanceOf(Error);
    expect((long as Error).message).to.match(
      /^RabbitMQ: the routing key must be at most 255 bytes once filled in .*the row's key is too long/,
    );
    const fits = messageTarget(a, 'INSERT', body(`{"id":"${'k'.repeat(253)}"}`));
    expect(fits).to.deep.equal({ exchange: 'x', routingKey: `t.${'k'.repeat(253)}` });
  });
});
