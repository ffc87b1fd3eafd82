import { expect } from 'chai';
import { isReservedPrefix, messageChange, messageContent, messageSchema } from '../../../src/tailer/messages.js';
import type { LogicalMessage } from '../../../src/tailer/logical-message.js';
import { parsePgoutput } from '../../../src/tailer/pgoutput.js';

// Outbox messages: the pgoutput 'M' message as the protocol documents it (protocol 1, no
// streaming: Byte1 'M', Int8 flags, Int64 LSN, String prefix, Int32 length, Byte[n] content), and
// how its content becomes the record's JSON. The tailer tests read real ones from Postgres.

function messageBytes(flags: number, lsn: bigint, prefix: string, content: Buffer): Buffer {
  const head = Buffer.alloc(1 + 1 + 8);
  head.writeUInt8(0x4d, 0);
  head.writeUInt8(flags, 1);
  head.writeBigUInt64BE(lsn, 2);
  const length = Buffer.alloc(4);
  length.writeInt32BE(content.length, 0);
  return Buffer.concat([head, Buffer.from(prefix, 'utf8'), Buffer.from([0]), length, content]);
}

describe('unit: outbox messages', () => {
  it('decodes a transactional message: flags, LSN, prefix, the content bytes as sent', () => {
    const content = Buffer.from('{"order": 42}');
    const msg = parsePgoutput(messageBytes(1, 0x16b3748n, 'shop.order_paid', content));
    expect(msg).to.deep.equal({ tag: 'message', transactional: true, lsn: 0x16b3748n, prefix: 'shop.order_paid', content });
  });

  it('tells a non-transactional message, and keeps empty and binary contents whole', () => {
    const binary = Buffer.from([0x00, 0xff, 0xfe, 0x01]);
    const msg = parsePgoutput(messageBytes(0, 1n, 'p', binary)) as LogicalMessage;
    expect(msg.transactional).to.equal(false);
    expect(msg.content.equals(binary)).to.equal(true);
    expect((parsePgoutput(messageBytes(1, 1n, '', Buffer.alloc(0))) as LogicalMessage).content.length).to.equal(0);
  });

  it('refuses a message whose content runs past its end', () => {
    const wire = messageBytes(1, 1n, 'p', Buffer.from('abcdef'));
    expect(() => parsePgoutput(wire.subarray(0, wire.length - 2))).to.throw(/runs past/);
  });

  it('renders content as its JSON when it is JSON, keeping the digits; else as a string', () => {
    expect(messageContent(Buffer.from(' {"amount": 10.50, "id": 12345678901234567890} \n'))).to.equal(
      '{"amount": 10.50, "id": 12345678901234567890}',
    );
    expect(JSON.parse(messageContent(Buffer.from('[1,"two",null]')))).to.deep.equal([1, 'two', null]);
    expect(messageContent(Buffer.from('42'))).to.equal('42');
    expect(messageContent(Buffer.from('"quoted"'))).to.equal('"quoted"');
    expect(messageContent(Buffer.from('order 42 paid'))).to.equal('"order 42 paid"');
    expect(messageContent(Buffer.from('{"unterminated": '))).to.equal('"{\\"unterminated\\": "');
    expect(messageContent(Buffer.alloc(0))).to.equal('""');
    expect(JSON.parse(messageContent(Buffer.from('naïve – 日本 \u0000 end')))).to.equal('naïve – 日本 \u0000 end');
  });

  it('renders bytes that are not UTF-8 as to_jsonb renders a bytea', () => {
    expect(messageContent(Buffer.from([0xde, 0xad, 0xbe, 0xef]))).to.equal('"\\\\xdeadbeef"');
    expect(JSON.parse(messageContent(Buffer.from([0x61, 0xc3])))).to.equal('\\x61c3'); // a cut multi-byte character
  });

  it('parses deeply nested content in bounded time, without a stack overflow', () => {
    const deep = Buffer.from('['.repeat(200_000) + ']'.repeat(200_000));
    const started = Date.now();
    expect(messageContent(deep)).to.have.length(400_000);
    expect(Date.now() - started).to.be.below(2000);
  });

  it('belongs to the schema its prefix names; walgate.* is reserved', () => {
    expect(messageSchema('shop_master.order_paid')).to.equal('shop_master');
    expect(messageSchema('shop_master')).to.equal('shop_master');
    expect(messageSchema('shop_master.a.b')).to.equal('shop_master');
    expect(messageSchema('')).to.equal('');
    expect(isReservedPrefix('walgate.backfill')).to.equal(true);
    expect(isReservedPrefix('walgate')).to.equal(false);
    expect(isReservedPrefix('shop.walgate.x')).to.equal(false);
  });

  it('is an INSERT of `_messages` whose record is {prefix, content}', () => {
    const at = new Date('2026-11-25T12:00:00Z');
    const msg = parsePgoutput(messageBytes(1, 5n, 'shop.x', Buffer.from('{"a":1}'))) as LogicalMessage;
    const change = messageChange('evt_0000000000000005_000001', at, 'shop', msg);
    expect(change).to.include({ operation: 'INSERT', schema: 'shop', table: '_messages', old: null });
    expect(change.record.names).to.deep.equal(['prefix', 'content']);
    expect(change.record.fragments).to.deep.equal(['"shop.x"', '{"a":1}']);
    expect(change.record.indexOf.get('prefix')).to.equal(0);
  });
});
