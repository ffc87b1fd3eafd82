import { expect } from 'chai';
import { decodeChange, describeRelation, type Relation } from '../../../src/tailer/decode.js';
import { buildPayload } from '../../../src/delivery/payload.js';
import { eventId, toEventRecord, type Operation } from '../../../src/tailer/events.js';
import { parsePgoutput, type PgoutputMessage } from '../../../src/tailer/pgoutput.js';
import { TypeRegistry } from '../../../src/tailer/types.js';
import { capturedCatalog, exactJson, loadPgoutputFixture, type CapturedTransaction } from './fixture.js';

// From captured pgoutput messages to the delivered body: each change of the capture, decoded and
// rendered into a payload, must carry the rows Postgres's to_jsonb gave for them at capture time.

const fixture = loadPgoutputFixture();
const TARGET = { projectId: 'proj_unit', environment: 'staging', select: null };

interface Delivered {
  /** The body, parsed with JSON.parse (for fields other than row values). */
  payload: Record<string, unknown>;
  /** The body, parsed with numbers kept exact (for row values). */
  exact: Record<string, unknown>;
  missing: string[];
}

/** Runs a transaction's messages as the tailer does: relations remembered, each change rendered. */
async function deliver(tx: CapturedTransaction, types: TypeRegistry, relations: Map<number, Relation>): Promise<Delivered[]> {
  const out: Delivered[] = [];
  let begin: Extract<PgoutputMessage, { tag: 'begin' }> | undefined;
  let index = 0;
  for (const m of tx.messages) {
    const msg = parsePgoutput(Buffer.from(m.hex, 'hex'));
    if (msg.tag === 'begin') begin = msg;
    else if (msg.tag === 'relation') relations.set(msg.relationOid, await describeRelation(msg, types));
    else if (msg.tag === 'insert' || msg.tag === 'update' || msg.tag === 'delete') {
      const rel = relations.get(msg.relationOid)!;
      const { change, missing } = decodeChange({
        operation: msg.tag.toUpperCase() as Operation,
        eventId: eventId(begin!.commitLsn, index++),
        committedAt: begin!.commitTime,
        rel,
        newTuple: msg.tag === 'delete' ? null : msg.new,
        oldTuple: msg.tag === 'insert' ? null : msg.old,
        oldIsKeyOnly: msg.tag !== 'insert' && msg.oldIsKeyOnly,
      });
      const body = buildPayload(TARGET, toEventRecord(change));
      out.push({ payload: JSON.parse(body) as Record<string, unknown>, exact: exactJson(body) as Record<string, unknown>, missing });
    }
  }
  return out;
}

describe('unit: captured changes become payloads carrying to_jsonb rows', () => {
  const types = new TypeRegistry(capturedCatalog(fixture));
  const relations = new Map<number, Relation>();
  const delivered: Delivered[][] = [];
  const columns = (table: string) => fixture.relations[table]!.columns.map((c) => c.name);

  before(async () => {
    for (const tx of fixture.transactions) delivered.push(await deliver(tx, types, relations));
  });

  it('gives each change the payload fields of the interface, ids from the WAL position', () => {
    const all = delivered.flat();
    expect(all).to.have.length(fixture.transactions.flatMap((t) => t.changes).length);
    for (const [i, tx] of fixture.transactions.entries()) {
      for (const [k, d] of delivered[i]!.entries()) {
        expect(Object.keys(d.payload)).to.have.members([
          'id',
          'timestamp',
          'project_id',
          'environment',
          'table',
          'event',
          'record',
          'data',
          'old_record',
          'changed_fields',
          'previous_event_id',
        ]);
        expect(d.payload).to.include({
          project_id: 'proj_unit',
          environment: 'staging',
          table: tx.changes[k]!.table,
          event: tx.changes[k]!.operation,
        });
        expect(d.payload.id).to.match(/^evt_[0-9A-F]{16}_\d{6}$/);
        expect(d.payload.timestamp).to.equal(new Date(Number(BigInt(tx.commitTimeMicros) / 1000n)).toISOString());
        expect(d.payload.data).to.deep.equal(d.payload.record);
      }
    }
    expect(new Set(all.map((d) => d.payload.id)).size).to.equal(all.length);
  });

  it('INSERT: record is the new row exactly as to_jsonb renders it (every type, NULLs, 6 kB TOASTed text)', () => {
    const inserts = fixture.transactions[0]!;
    for (const [k, change] of inserts.changes.entries()) {
      const d = delivered[0]![k]!;
      expect(d.exact.record).to.deep.equal(exactJson(change.new!.jsonb));
      expect(d.payload).to.deep.include({ old_record: null, changed_fields: [] });
      expect(d.missing).to.deep.equal([]);
    }
  });

  it('UPDATE under REPLICA IDENTITY FULL: the unchanged TOASTed value is taken from the old row; changed_fields are the columns that differ', () => {
    const change = fixture.transactions[1]!.changes[0]!;
    const d = delivered[1]![0]!;
    expect(d.exact.record).to.deep.equal(exactJson(change.new!.jsonb));
    expect(d.exact.old_record).to.deep.equal(exactJson(change.old!.jsonb));
    expect(d.payload.changed_fields).to.deep.equal(['counter', 'docb', 'nothing']);
    expect(d.missing).to.deep.equal([]);
  });

  it('UPDATE under the default identity: a TOASTed value Postgres did not send is null and reported missing', () => {
    const change = fixture.transactions[2]!.changes[0]!;
    const d = delivered[2]![0]!;
    const expected = exactJson(change.new!.jsonb) as Record<string, unknown>;
    expect(d.exact.record).to.deep.equal({ ...expected, big: null });
    expect(d.missing).to.deep.equal(['big']);
    // Without an old image nothing can be compared: every column may have changed.
    expect(d.payload).to.deep.include({ old_record: null, changed_fields: columns('keyed') });
  });

  it('UPDATE of the key under the default identity: the new row whole, no old image', () => {
    const change = fixture.transactions[3]!.changes[0]!;
    const d = delivered[3]![0]!;
    expect(d.exact.record).to.deep.equal(exactJson(change.new!.jsonb));
    expect(d.payload.old_record).to.equal(null);
    expect(d.missing).to.deep.equal([]);
  });

  it('DELETE: record is the row as it was (whole under FULL, the key alone otherwise)', () => {
    const [full, keyOnly] = fixture.transactions[4]!.changes;
    const [dFull, dKey] = delivered[4]!;
    expect(dFull!.exact.record).to.deep.equal(exactJson(full!.old!.jsonb));
    expect(dFull!.payload).to.deep.include({ changed_fields: [] });
    const old = exactJson(keyOnly!.old!.jsonb) as Record<string, unknown>;
    expect(dKey!.exact.record).to.deep.equal({ id: old.id, big: null, n: null });
  });

  it('TRUNCATE produces no row change', () => {
    expect(delivered[5]).to.deep.equal([]);
  });
});
