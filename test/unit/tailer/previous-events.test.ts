import { expect } from 'chai';
import type { DeliveryRecord } from '../../../src/tailer/events.js';
import { PreviousEvents } from '../../../src/tailer/previous-events.js';

// Each row-ordered delivery names the change of its row handed before it to its subscription
// (keys name their subscription), or null when that is not known — never a wrong id.

const evt = (lsn: number, index = 0) => `evt_${lsn.toString(16).toUpperCase().padStart(16, '0')}_${String(index).padStart(6, '0')}`;
const delivery = (eventId: string, orderKeys: string[] | null): DeliveryRecord => ({
  id: `del_${eventId}`,
  webhookId: 'wh_1',
  eventId,
  eventType: 'UPDATE',
  select: null,
  orderKeys,
});
const previousOf = (p: PreviousEvents, eventId: string, keys: string[] | null) => p.stamp([delivery(eventId, keys)])[0]!.previousEventId;

describe('unit: previous events of ordered rows', () => {
  it('names the last change of the same key; null for a row’s first change; unordered deliveries get none', () => {
    const p = new PreviousEvents();
    expect(previousOf(p, evt(1), ['a'])).to.equal(null);
    expect(previousOf(p, evt(2), ['b'])).to.equal(null);
    expect(previousOf(p, evt(3), ['a'])).to.equal(evt(1));
    expect(previousOf(p, evt(3, 1), ['a'])).to.equal(evt(3));
    expect(previousOf(p, evt(4), null)).to.equal(undefined);
    expect(previousOf(p, evt(5), ['b'])).to.equal(evt(2));
  });

  it('a change of the primary key (two keys) names the later of both rows’ last changes, and is the last of both', () => {
    const p = new PreviousEvents();
    p.stamp([delivery(evt(1), ['old'])]);
    p.stamp([delivery(evt(2), ['new'])]);
    expect(previousOf(p, evt(3), ['new', 'old'])).to.equal(evt(2));
    expect(previousOf(p, evt(4), ['old'])).to.equal(evt(3));
    expect(previousOf(p, evt(5), ['new'])).to.equal(evt(3));
  });

  it('read again from an earlier position: unknown, then known again in order — never a later id', () => {
    const p = new PreviousEvents();
    p.stamp([delivery(evt(10), ['a'])]);
    expect(previousOf(p, evt(5), ['a'])).to.equal(null);
    expect(previousOf(p, evt(10), ['a'])).to.equal(evt(5));
  });

  it('is bounded: the least recently changed row is forgotten first (then unknown)', () => {
    const p = new PreviousEvents(2);
    p.stamp([delivery(evt(1), ['a']), delivery(evt(2), ['b'])]);
    p.stamp([delivery(evt(3), ['a'])]); // a is the most recent now
    p.stamp([delivery(evt(4), ['c'])]); // evicts b
    expect(previousOf(p, evt(5), ['b'])).to.equal(null);
    expect(previousOf(p, evt(6), ['c'])).to.equal(evt(4));
  });
});
