import type { Lsn } from './lsn.js';

// pgoutput's logical decoding message ('M'), what `pg_logical_emit_message` writes. Sent only when
// replication starts with `messages 'true'` (Postgres 14+). Format (protocol 1, not streamed):
// Byte1('M'), Int8 flags (1: transactional), Int64 LSN, String prefix, Int32 length, Byte[n] content.

export interface LogicalMessage {
  tag: 'message';
  /** True when written with `transactional = true`: it arrives inside its transaction, at its commit. */
  transactional: boolean;
  lsn: Lsn;
  prefix: string;
  content: Buffer;
}

export function parseLogicalMessage(b: Buffer): LogicalMessage {
  let p = 1;
  const transactional = (b.readUInt8(p) & 1) === 1;
  p += 1;
  const lsn = b.readBigUInt64BE(p);
  p += 8;
  const end = b.indexOf(0, p);
  if (end < 0) throw new Error('pgoutput: unterminated message prefix');
  const prefix = b.toString('utf8', p, end);
  p = end + 1;
  const length = b.readInt32BE(p);
  p += 4;
  if (p + length > b.length) throw new Error('pgoutput: message content runs past the message');
  return { tag: 'message', transactional, lsn, prefix, content: b.subarray(p, p + length) };
}
