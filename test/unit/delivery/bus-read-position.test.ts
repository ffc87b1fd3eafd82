import { expect } from 'chai';
import { compareEventIds, ReadPosition } from '../../../src/delivery/bus/read-position.js';

const evt = (lsn: number, index: number) => `evt_${lsn.toString(16).toUpperCase().padStart(16, '0')}_${index.toString().padStart(6, '0')}`;

describe('delivery bus: read position', () => {
  it('compares event ids by commit position, then by index (also past six digits)', () => {
    expect(compareEventIds(evt(0x1a0, 5), evt(0x1a0, 5))).to.equal(0);
    expect(compareEventIds(evt(0x1a0, 5), evt(0x1b0, 0))).to.equal(-1);
    expect(compareEventIds(evt(0xff0, 0), evt(0x1000, 0))).to.equal(-1);
    expect(compareEventIds(evt(0x1a0, 999_999), evt(0x1a0, 1_000_000))).to.equal(-1);
    expect(compareEventIds(evt(0x1a0, 12), evt(0x1a0, 3))).to.equal(1);
  });

  it('new deliveries in commit order are not looked up; one read again, or behind the furthest, is', () => {
    const p = new ReadPosition();
    expect(p.mayRepeat(evt(10, 0), 'd1')).to.equal(false);
    expect(p.mayRepeat(evt(10, 0), 'd1-other-subscription'), 'the same change to another subscription').to.equal(false);
    expect(p.mayRepeat(evt(10, 1), 'd2')).to.equal(false);
    expect(p.mayRepeat(evt(11, 0), 'd3')).to.equal(false);
    expect(p.mayRepeat(evt(11, 0), 'd3'), 'the same delivery again').to.equal(true);
    expect(p.mayRepeat(evt(10, 1), 'd2'), 'behind the furthest: published again').to.equal(true);
    expect(p.mayRepeat(evt(10, 5), 'd9'), 'behind the furthest, never seen: still looked up').to.equal(true);
    expect(p.mayRepeat(evt(12, 0), 'd4')).to.equal(false);
  });
});
