import type { Client } from 'pg';
import type { Lsn } from './lsn.js';
import { parseLogicalMessage, type LogicalMessage } from './logical-message.js';

// A pgoutput (protocol 1) decoder that keeps column values as the text Postgres sent, so that
// they can be rendered exactly as `to_jsonb` would (src/tailer/values.ts). The parser that ships
// with pg-logical-replication runs node-postgres's type parsers on every value (int8 and numeric
// through JS numbers or Dates), which loses the digits and the formats we must keep.
// Message formats: https://www.postgresql.org/docs/current/protocol-logicalrep-message-formats.html

/** An unchanged TOASTed value: Postgres did not send it; it must be taken from the old row. */
export const UNCHANGED_TOAST: unique symbol = Symbol('unchanged-toast');
export type RawValue = string | null | typeof UNCHANGED_TOAST;
export type RawTuple = RawValue[];

export interface RelationColumn {
  name: string;
  typeOid: number;
  isKey: boolean;
}

export interface RelationMessage {
  tag: 'relation';
  relationOid: number;
  schema: string;
  name: string;
  replicaIdentity: 'default' | 'nothing' | 'full' | 'index';
  columns: RelationColumn[];
}

export type PgoutputMessage =
  | { tag: 'begin'; commitLsn: Lsn; commitTime: Date; xid: number }
  | { tag: 'commit'; commitLsn: Lsn; endLsn: Lsn; commitTime: Date }
  | RelationMessage
  | { tag: 'insert'; relationOid: number; new: RawTuple }
  | { tag: 'update'; relationOid: number; old: RawTuple | null; oldIsKeyOnly: boolean; new: RawTuple }
  | { tag: 'delete'; relationOid: number; old: RawTuple; oldIsKeyOnly: boolean }
  | { tag: 'truncate'; relationOids: number[] }
  | LogicalMessage
  | { tag: 'type' | 'origin' };

// Postgres timestamps count microseconds from 2000-01-01.
const PG_EPOCH_MS = 946_684_800_000;

class Reader {
  #p = 0;
  constructor(private readonly b: Buffer) {}

  byte(): number {
    return this.b.readUInt8(this.#p++);
  }
  int16(): number {
    const v = this.b.readInt16BE(this.#p);
    this.#p += 2;
    return v;
  }
  int32(): number {
    const v = this.b.readInt32BE(this.#p);
    this.#p += 4;
    return v;
  }
  uint32(): number {
    const v = this.b.readUInt32BE(this.#p);
    this.#p += 4;
    return v;
  }
  lsn(): Lsn {
    const v = this.b.readBigUInt64BE(this.#p);
    this.#p += 8;
    return v;
  }
  time(): Date {
    const micros = this.b.readBigInt64BE(this.#p);
    this.#p += 8;
    return new Date(PG_EPOCH_MS + Number(micros / 1000n));
  }
  cstring(): string {
    const end = this.b.indexOf(0, this.#p);
    if (end < 0) throw new Error('pgoutput: unterminated string');
    const s = this.b.toString('utf8', this.#p, end);
    this.#p = end + 1;
    return s;
  }
  text(length: number): string {
    if (this.#p + length > this.b.length) throw new Error('pgoutput: value runs past the message');
    const s = this.b.toString('utf8', this.#p, this.#p + length);
    this.#p += length;
    return s;
  }
  skip(length: number): void {
    this.#p += length;
  }
}

function tuple(r: Reader): RawTuple {
  const n = r.int16();
  const values: RawTuple = new Array(n);
  for (let i = 0; i < n; i++) {
    const kind = r.byte();
    if (kind === 0x74 /* t */) values[i] = r.text(r.int32());
    else if (kind === 0x6e /* n */) values[i] = null;
    else if (kind === 0x75 /* u */) values[i] = UNCHANGED_TOAST;
    else if (kind === 0x62 /* b */) throw new Error('pgoutput: binary values were not requested');
    else throw new Error(`pgoutput: unknown tuple value kind ${kind}`);
  }
  return values;
}

const IDENTITY = { d: 'default', n: 'nothing', f: 'full', i: 'index' } as const;

export function parsePgoutput(b: Buffer): PgoutputMessage {
  const r = new Reader(b);
  const tag = r.byte();
  switch (tag) {
    case 0x42 /* B */:
      return { tag: 'begin', commitLsn: r.lsn(), commitTime: r.time(), xid: r.int32() };
    case 0x43 /* C */: {
      r.byte(); // flags, unused
      return { tag: 'commit', commitLsn: r.lsn(), endLsn: r.lsn(), commitTime: r.time() };
    }
    case 0x52 /* R */: {
      const relationOid = r.uint32();
      const schema = r.cstring();
      const name = r.cstring();
      const identity = String.fromCharCode(r.byte()) as keyof typeof IDENTITY;
      const n = r.int16();
      const columns: RelationColumn[] = [];
      for (let i = 0; i < n; i++) {
        const flags = r.byte();
        const colName = r.cstring();
        const typeOid = r.uint32();
        r.int32(); // type modifier
        columns.push({ name: colName, typeOid, isKey: (flags & 1) === 1 });
      }
      return { tag: 'relation', relationOid, schema, name, replicaIdentity: IDENTITY[identity] ?? 'default', columns };
    }
    case 0x49 /* I */: {
      const relationOid = r.uint32();
      r.byte(); // 'N'
      return { tag: 'insert', relationOid, new: tuple(r) };
    }
    case 0x55 /* U */: {
      const relationOid = r.uint32();
      const kind = r.byte();
      let old: RawTuple | null = null;
      let oldIsKeyOnly = false;
      if (kind === 0x4b /* K */ || kind === 0x4f /* O */) {
        oldIsKeyOnly = kind === 0x4b;
        old = tuple(r);
        r.byte(); // 'N': the new tuple follows
      }
      return { tag: 'update', relationOid, old, oldIsKeyOnly, new: tuple(r) };
    }
    case 0x44 /* D */: {
      const relationOid = r.uint32();
      const kind = r.byte();
      return { tag: 'delete', relationOid, oldIsKeyOnly: kind === 0x4b, old: tuple(r) };
    }
    case 0x54 /* T */: {
      const n = r.int32();
      r.byte(); // options
      const relationOids: number[] = [];
      for (let i = 0; i < n; i++) relationOids.push(r.uint32());
      return { tag: 'truncate', relationOids };
    }
    case 0x59 /* Y */:
      return { tag: 'type' };
    case 0x4f /* O */:
      return { tag: 'origin' };
    case 0x4d /* M */:
      return parseLogicalMessage(b);
    default:
      throw new Error(`pgoutput: unknown message ${String.fromCharCode(tag)}`);
  }
}

/**
 * The plugin object pg-logical-replication drives: how to start the stream and how to parse each
 * XLogData payload. `onParsed` counts messages as they arrive, before any handler runs, so the
 * reader knows whether a keepalive overtook data still queued behind it.
 */
export class RawPgoutputPlugin {
  constructor(
    private readonly publication: string,
    private readonly onParsed: () => void,
  ) {}

  get name(): string {
    return 'pgoutput';
  }

  parse(buffer: Buffer): PgoutputMessage {
    this.onParsed();
    return parsePgoutput(buffer);
  }

  start(client: Client, slotName: string, lastLsn: string): Promise<unknown> {
    // Identifiers cannot be parameters in the replication protocol; both were checked by the caller.
    const sql = `START_REPLICATION SLOT "${slotName}" LOGICAL ${lastLsn} (proto_version '1', publication_names '${this.publication}', messages 'true')`;
    return client.query(sql);
  }
}
