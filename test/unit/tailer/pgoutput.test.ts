import { expect } from 'chai';
import { parseLsn } from '../../../src/tailer/lsn.js';
import { parsePgoutput, UNCHANGED_TOAST, type PgoutputMessage, type RawTuple, type RawValue } from '../../../src/tailer/pgoutput.js';
import { loadPgoutputFixture, type CapturedRelation, type CapturedRow } from './fixture.js';

// The decoder against pgoutput messages a real Postgres wrote (test/unit/fixtures/pgoutput.json):
// every field it reads is checked against what Postgres said independently — the xid and commit
// time of each transaction, the LSN logical decoding gave the commit, the relation's catalog, and
// each column's text output.

const fixture = loadPgoutputFixture();
const rel = (table: string): CapturedRelation => fixture.relations[table]!;

function parse(hex: string): PgoutputMessage {
  return parsePgoutput(Buffer.from(hex, 'hex'));
}

/** The tuple pgoutput must have sent for a captured row: each column's text, in table order. */
function tupleOf(table: string, row: CapturedRow, overrides: Record<string, RawValue> = {}): RawTuple {
  return rel(table).columns.map((c) => (c.name in overrides ? overrides[c.name]! : row.text[c.name]!));
}

/** A key-only old tuple: the key columns' text, NULL elsewhere. */
function keyTupleOf(table: string, row: CapturedRow): RawTuple {
  return rel(table).columns.map((c) => (c.isKey ? row.text[c.name]! : null));
}

describe('unit: pgoutput decoder on captured messages', () => {
  it('was captured from a real server with several transactions', () => {
    expect(fixture.transactions).to.have.length(6);
    expect(fixture.transactions.every((t) => t.messages.length >= 3)).to.equal(true);
  });

  for (const [i, tx] of fixture.transactions.entries()) {
    describe(`transaction ${i + 1}: ${tx.name}`, () => {
      const messages = tx.messages.map((m) => parse(m.hex));

      it('begins with its xid and commit time, and commits at the LSN logical decoding reported', () => {
        const begin = messages[0]!;
        const commit = messages[messages.length - 1]!;
        if (begin.tag !== 'begin' || commit.tag !== 'commit') throw new Error(`framed by ${begin.tag} … ${commit.tag}`);
        const commitMs = Number(BigInt(tx.commitTimeMicros) / 1000n);
        expect(begin.xid).to.equal(tx.xid);
        expect(begin.commitTime.getTime()).to.equal(commitMs);
        expect(commit.commitTime.getTime()).to.equal(commitMs);
        expect(commit.commitLsn).to.equal(begin.commitLsn);
        // The SQL interface reports a commit at the end of its WAL record, which is commit's endLsn.
        expect(commit.endLsn).to.equal(parseLsn(tx.messages[tx.messages.length - 1]!.lsn));
        expect(begin.commitLsn < commit.endLsn).to.equal(true);
        expect(messages.slice(1, -1).map((m) => m.tag)).not.to.include.oneOf(['begin', 'commit']);
      });

      it('describes each table as the catalog does', () => {
        const relations = messages.filter((m) => m.tag === 'relation');
        for (const r of relations) {
          const expected = rel(r.name);
          expect(r).to.deep.equal({
            tag: 'relation',
            relationOid: expected.oid,
            schema: expected.schema,
            name: expected.name,
            replicaIdentity: expected.replicaIdentity,
            // Under REPLICA IDENTITY FULL every column is part of the identity.
            columns: expected.columns.map((c) => ({ ...c, isKey: c.isKey || expected.replicaIdentity === 'full' })),
          });
        }
      });

      it('carries each changed row as Postgres printed it', () => {
        const data = messages.filter((m) => m.tag === 'insert' || m.tag === 'update' || m.tag === 'delete');
        expect(data.map((m) => m.tag)).to.deep.equal(tx.changes.map((c) => c.operation.toLowerCase()));
        for (const [k, m] of data.entries()) {
          const change = tx.changes[k]!;
          const r = rel(change.table);
          expect(m).to.include({ relationOid: r.oid });
          const toastUnchanged: Record<string, RawValue> = { big: UNCHANGED_TOAST };
          if (m.tag === 'insert') {
            expect(m.new).to.deep.equal(tupleOf(change.table, change.new!));
          } else if (m.tag === 'update') {
            if (r.replicaIdentity === 'full') {
              // The old image is whole (its TOASTed value fetched); the unchanged TOASTed value is not re-sent.
              expect(m.oldIsKeyOnly).to.equal(false);
              expect(m.old).to.deep.equal(tupleOf(change.table, change.old!));
              expect(m.new).to.deep.equal(tupleOf(change.table, change.new!, toastUnchanged));
            } else if (change.old!.text.id !== change.new!.text.id) {
              // The key changed: the old key alone is sent.
              expect(m.oldIsKeyOnly).to.equal(true);
              expect(m.old).to.deep.equal(keyTupleOf(change.table, change.old!));
              expect(m.new).to.deep.equal(tupleOf(change.table, change.new!));
            } else {
              expect(m.old).to.equal(null);
              expect(m.new).to.deep.equal(tupleOf(change.table, change.new!, toastUnchanged));
            }
          } else if (m.tag === 'delete') {
            const full = r.replicaIdentity === 'full';
            expect(m.oldIsKeyOnly).to.equal(!full);
            expect(m.old).to.deep.equal(full ? tupleOf(change.table, change.old!) : keyTupleOf(change.table, change.old!));
          }
        }
      });

      it('names the truncated tables', () => {
        const truncates = messages.filter((m) => m.tag === 'truncate');
        if (!tx.truncate) return expect(truncates).to.have.length(0);
        expect(truncates).to.deep.equal([{ tag: 'truncate', relationOids: tx.truncate.map((t) => rel(t).oid) }]);
      });

      it('reads every other message as a kind it knows (types of user-defined columns)', () => {
        const known = new Set(['begin', 'commit', 'relation', 'insert', 'update', 'delete', 'truncate', 'type']);
        expect(messages.filter((m) => !known.has(m.tag))).to.deep.equal([]);
      });
    });
  }

  it('covers the cases it claims: a TOASTed value left out of an update, NULLs, a key-only old row', () => {
    const all = fixture.transactions.flatMap((t) => t.messages.map((m) => parse(m.hex)));
    const tuples = all.flatMap((m) => ('new' in m ? [m.new] : []).concat('old' in m && m.old ? [m.old] : []));
    expect(tuples.some((t) => t.includes(UNCHANGED_TOAST))).to.equal(true);
    expect(tuples.some((t) => t.includes(null))).to.equal(true);
    expect(all.some((m) => m.tag === 'delete' && m.oldIsKeyOnly)).to.equal(true);
    expect(all.some((m) => m.tag === 'type')).to.equal(true);
  });

  describe('refuses what it cannot read', () => {
    const insert = fixture.transactions[0]!.messages.find((m) => m.hex.startsWith('49'))!.hex;

    it('a message cut short', () => {
      expect(() => parse(insert.slice(0, insert.length - 20))).to.throw();
    });

    it('an unknown message kind', () => {
      expect(() => parse(`7a${insert.slice(2)}`)).to.throw(/unknown message/);
    });

    it('a binary column value (never requested)', () => {
      // The first column's kind byte follows tag (1), relation oid (4), 'N' (1) and the column count (2).
      const at = 2 * (1 + 4 + 1 + 2);
      expect(insert.slice(at, at + 2)).to.equal('74'); // 't'
      expect(() => parse(`${insert.slice(0, at)}62${insert.slice(at + 2)}`)).to.throw(/binary/);
    });
  });
});
