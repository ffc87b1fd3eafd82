import { expect } from 'chai';
import { loadConfig } from '../../../src/core/config.js';
import {
  busMessageId,
  decodeBusMessage,
  encodeBusItem,
  encodeBusMessage,
  partitionOf,
  partitionSubject,
} from '../../../src/delivery/bus/messages.js';
import type { CapturedDelivery, CapturedEvent } from '../../../src/tailer/sink.js';

const event: CapturedEvent = {
  id: 'evt_0000000001A2B3C4_3',
  schema: 'shop_master',
  table: 'orders',
  operation: 'UPDATE',
  committedAt: new Date('2026-11-29T10:00:00.123Z'),
  columns: ['id', 'status'],
  record: ['7', '"paid"'],
  old: ['7', '"new"'],
  changedFields: ['status'],
};
const delivery = (over: Partial<CapturedDelivery> = {}): CapturedDelivery => ({
  id: `del_${event.id}_wh_1`,
  webhookId: 'wh_1',
  eventId: event.id,
  eventType: 'UPDATE',
  select: null,
  orderKeys: ['7'],
  previousEventId: 'evt_0000000001A2B300_1',
  ...over,
});

describe('delivery bus: messages and partitions', () => {
  it('a message carries its deliveries and subscription changes back exactly, in order, the commit time as a Date', () => {
    const items = [
      { kind: 'delivery' as const, event, delivery: delivery() },
      { kind: 'subscriptionChanged' as const, webhookId: 'wh_9' },
      { kind: 'delivery' as const, event, delivery: delivery({ id: 'del_2', webhookId: 'wh_2' }) },
    ];
    const back = decodeBusMessage(encodeBusMessage(items.map(encodeBusItem)));
    expect(back).to.deep.equal(items);
    expect(back[0]!.kind === 'delivery' && back[0]!.event.committedAt).to.be.instanceOf(Date);
  });

  it('the message id is its first and last delivery and its length: the same entries make the same id', () => {
    const a = { kind: 'delivery' as const, event, delivery: delivery({ id: 'del_a' }) };
    const b = { kind: 'delivery' as const, event, delivery: delivery({ id: 'del_b' }) };
    const s = { kind: 'subscriptionChanged' as const, webhookId: 'wh_1' };
    expect(busMessageId([a, s, b])).to.equal('del_a~del_b~3');
    expect(busMessageId([a, b])).to.equal('del_a~del_b~2');
    expect(busMessageId([s]), 'news alone: no id (read twice, it does no harm)').to.equal(undefined);
  });

  it('something else on the subject is refused with an error, not taken for a delivery', () => {
    expect(() => decodeBusMessage('{"hello":1}')).to.throw('not a walgate delivery message');
    expect(() => decodeBusMessage('[{"hello":1}]')).to.throw('not a walgate delivery message');
    expect(() => decodeBusMessage('[null]')).to.throw('not a walgate delivery message');
    expect(() => decodeBusMessage('not json')).to.throw();
  });

  it("a row's changes share a partition; the partition is the same in every process", () => {
    const a = partitionOf(delivery({ id: 'x', eventId: 'evt_1_0' }), 16);
    const b = partitionOf(delivery({ id: 'y', eventId: 'evt_9_4' }), 16);
    expect(a).to.equal(b);
    // A fixed value: a change in the hash would move rows between partitions across an upgrade.
    expect([partitionOf(delivery(), 16), partitionOf(delivery(), 1024)]).to.deep.equal([11, 299]);
    expect(partitionOf(delivery({ orderKeys: ['7'], webhookId: 'wh_1' }), 1024)).to.equal(
      partitionOf(delivery({ orderKeys: ['7', '6'], webhookId: 'wh_1' }), 1024),
    );
  });

  it('rows and unordered changes spread over the partitions', () => {
    const rows = new Set(Array.from({ length: 400 }, (_, i) => partitionOf(delivery({ orderKeys: [String(i)] }), 8)));
    const unordered = new Set(Array.from({ length: 400 }, (_, i) => partitionOf(delivery({ orderKeys: null, eventId: `evt_${i}_0` }), 8)));
    expect([...rows].sort()).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7]);
    expect([...unordered].sort()).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(partitionSubject({ stream: 'WALGATE_DELIVERIES', partitions: 8 }, 3)).to.equal('WALGATE_DELIVERIES.p.3');
  });

  it('DELIVERY_BUS takes the servers of one cluster; anything else is a configuration error naming it', () => {
    const bus = loadConfig({ DELIVERY_BUS: 'nats://a:4222, nats://b:4223', DELIVERY_BUS_REPLICAS: '3' }).bus!;
    expect(bus).to.deep.equal({ servers: ['nats://a:4222', 'nats://b:4223'], stream: 'WALGATE_DELIVERIES', partitions: 16, replicas: 3 });
    expect(loadConfig({}).bus).to.equal(undefined);
    expect(() => loadConfig({ DELIVERY_BUS: 'http://a:4222' })).to.throw(/DELIVERY_BUS: expected nats:\/\/ URLs/);
    expect(() => loadConfig({ DELIVERY_BUS: 'nats://a', DELIVERY_BUS_STREAM: 'a.b' })).to.throw(/DELIVERY_BUS_STREAM/);
    expect(() => loadConfig({ DELIVERY_BUS: 'nats://a', DELIVERY_BUS_PARTITIONS: '0' })).to.throw(/DELIVERY_BUS_PARTITIONS/);
  });
});
