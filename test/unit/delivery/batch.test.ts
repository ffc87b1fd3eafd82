import { expect } from 'chai';
import { BATCH_OVERHEAD, batchBody, chunk, gather, pack, type BatchSettings } from '../../../src/delivery/batch.js';

const s: BatchSettings = { maxEvents: 4, maxWaitMs: 100, maxBytes: 1000 };

describe('unit: how a batch is gathered (batch.ts)', () => {
  it('full by count: goes at once with maxEvents, whatever waits behind', () => {
    expect(gather([10, 10, 10, 10, 10, 10], s, 0)).to.deep.equal({ take: 4 });
  });

  it('full by bytes: goes with what fits, the body within maxBytes', () => {
    const bytes = [400, 400, 400];
    expect(gather(bytes, s, 0)).to.deep.equal({ take: 2 });
    expect(BATCH_OVERHEAD + 400 + 400).to.be.at.most(s.maxBytes);
  });

  it('a change larger than maxBytes goes alone, at once', () => {
    expect(gather([5000, 10], s, 0)).to.deep.equal({ take: 1 });
    expect(gather([5000], s, 0)).to.deep.equal({ take: 1 });
  });

  it('not full: waits the rest of maxWaitMs for the oldest, then goes with what there is', () => {
    expect(gather([10, 10], s, 30)).to.deep.equal({ waitMs: 70 });
    expect(gather([10, 10], s, 100)).to.deep.equal({ take: 2 });
    expect(gather([10], { ...s, maxWaitMs: 0 }, 0)).to.deep.equal({ take: 1 });
  });

  it('told to go now (a stop, a change near its park bound): goes unfilled', () => {
    expect(gather([10, 10], s, 0, true)).to.deep.equal({ take: 2 });
  });

  it('chunk: the retry queue cuts its deliveries into batches in order, by count and bytes', () => {
    const items = [1, 2, 3, 4, 5, 6, 7, 8, 9];
    expect(chunk(items, () => 10, s)).to.deep.equal([[1, 2, 3, 4], [5, 6, 7, 8], [9]]);
    expect(chunk(items.slice(0, 4), (i) => (i === 2 ? 990 : 10), s)).to.deep.equal([[1], [2], [3, 4]]);
  });

  it("pack: a row's chain is never split between two batches; one too long for a batch keeps its prefix, the rest is left", () => {
    expect(pack([[1, 2, 3], [4, 5], [6]], () => 10, s)).to.deep.equal({
      batches: [
        [1, 2, 3],
        [4, 5, 6],
      ],
      left: [],
    });
    expect(pack([[1], [2, 3, 4, 5, 6, 7]], () => 10, s)).to.deep.equal({ batches: [[1], [2, 3, 4, 5]], left: [6, 7] });
    expect(pack([[1, 2, 3]], (i) => (i === 1 ? 600 : 500), s)).to.deep.equal({ batches: [[1]], left: [2, 3] });
  });

  it('the body is {"events": [...]} of the bodies exactly as they are', () => {
    const bodies = ['{"id":"evt_1","x":"é"}', '{"id":"evt_2"}'];
    expect(batchBody(bodies)).to.equal('{"events":[{"id":"evt_1","x":"é"},{"id":"evt_2"}]}');
    expect(JSON.parse(batchBody(bodies)).events).to.deep.equal(bodies.map((b) => JSON.parse(b)));
  });
});
