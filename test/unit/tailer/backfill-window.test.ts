import { expect } from 'chai';
import { WatermarkWindow, type PageRow } from '../../../src/tailer/backfill/window.js';
import { parseWatermark, WATERMARK_PREFIX } from '../../../src/tailer/backfill/watermarks.js';
import type { Change } from '../../../src/tailer/events.js';
import { changeRows, rowIdentity } from '../../../src/tailer/order-keys.js';

// The watermark window of a backfill page (src/tailer/backfill/window.ts): what it hands on at the
// high watermark given what the WAL showed between low and high.

const columns = ['id', 'v'];
const indexOf = new Map(columns.map((c, i) => [c, i]));
const row = (id: number, v: string) => ({ names: columns, fragments: [String(id), JSON.stringify(v)], indexOf });
const identity = (id: number) => rowIdentity('s', 't', row(id, ''), [0]);
const pageRow = (id: number, v = 'old'): PageRow => ({ identity: identity(id), fragments: row(id, v).fragments });
const page = (...ids: number[]) => ids.map((id) => pageRow(id));
const ids = (rows: PageRow[]) => rows.map((r) => Number(r.fragments[0]));

function update(id: number, oldId = id): Change {
  return {
    eventId: 'evt_x',
    operation: 'UPDATE',
    schema: 's',
    table: 't',
    committedAt: new Date(),
    record: row(id, 'new'),
    old: row(oldId, 'old'),
    changedFields: ['v'],
  };
}

function handed(w: WatermarkWindow): number[] {
  const out = w.high();
  if (out.kind !== 'rows') throw new Error(`expected rows, got ${out.reason}`);
  return ids(out.rows);
}

describe('backfill watermark window', () => {
  it('hands on every row read when nothing changed between the watermarks', () => {
    const w = new WatermarkWindow();
    w.low();
    w.read(page(1, 2, 3));
    expect(handed(w)).to.deep.equal([1, 2, 3]);
  });

  it('drops the rows a change touched between low and high — before or after the read — and keeps the others', () => {
    const w = new WatermarkWindow();
    w.low();
    // Committed after low, before the SELECT: the read saw the new version, the change carries it too.
    w.changed([identity(2)]);
    w.read(page(1, 2, 3, 4));
    // Committed after the SELECT, before high: the read saw the old version — it would be stale.
    w.changed([identity(4)]);
    const out = w.high();
    expect(out).to.deep.include({ kind: 'rows', dropped: 2 });
    expect(handed(w)).to.deep.equal([1, 3]);
  });

  it('ignores changes before the low watermark and after the high one', () => {
    const w = new WatermarkWindow();
    w.changed([identity(1)]);
    expect(w.collecting).to.equal(false);
    w.low();
    expect(w.collecting).to.equal(true);
    w.read(page(1, 2));
    expect(handed(w)).to.deep.equal([1, 2]);
    // After high: the change comes after the READ in the stream, nothing to drop.
    w.changed([identity(2)]);
    expect(handed(w)).to.deep.equal([1, 2]);
  });

  it('answers the same when the high watermark is read again (a replication session re-reading the WAL)', () => {
    const w = new WatermarkWindow();
    w.low();
    w.read(page(1, 2));
    w.changed([identity(1)]);
    const first = w.high();
    w.low();
    w.changed([identity(2)]);
    expect(w.high()).to.deep.equal(first);
  });

  it('asks for the page to be read again when the low watermark was not seen', () => {
    const w = new WatermarkWindow();
    w.read(page(1));
    expect(w.high()).to.deep.equal({ kind: 'retry', reason: 'the low watermark was not seen' });
  });

  it('asks for the page to be read again when the high watermark comes before the rows', () => {
    const w = new WatermarkWindow();
    w.low();
    expect(w.high().kind).to.equal('retry');
  });

  it('hands nothing on when the table was truncated inside the window', () => {
    const w = new WatermarkWindow();
    w.low();
    w.read(page(1, 2));
    w.truncated();
    expect(handed(w)).to.deep.equal([]);
  });

  it('a change of the primary key drops the row under its old key and under its new one', () => {
    const w = new WatermarkWindow();
    w.low();
    w.read(page(1, 2, 3));
    w.changed(changeRows(update(3, 1), [0])!);
    expect(handed(w)).to.deep.equal([2]);
  });

  it('reads only its own watermarks: other prefixes, forged or oversized content are not watermarks', () => {
    const ok = Buffer.from(JSON.stringify({ page: 'page_1', mark: 'high' }));
    expect(parseWatermark(WATERMARK_PREFIX, ok)).to.deep.equal({ page: 'page_1', mark: 'high' });
    expect(parseWatermark('walgate.other', ok)).to.equal(undefined);
    expect(parseWatermark(WATERMARK_PREFIX, Buffer.from('not json'))).to.equal(undefined);
    expect(parseWatermark(WATERMARK_PREFIX, Buffer.from(JSON.stringify({ page: 1, mark: 'low' })))).to.equal(undefined);
    expect(parseWatermark(WATERMARK_PREFIX, Buffer.from(JSON.stringify({ page: 'p', mark: 'middle' })))).to.equal(undefined);
    expect(parseWatermark(WATERMARK_PREFIX, Buffer.alloc(2000, 0x20))).to.equal(undefined);
  });
});
