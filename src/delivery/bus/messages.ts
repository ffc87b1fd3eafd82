import type { CapturedDelivery, CapturedEvent } from '../../tailer/sink.js';

// What travels on the delivery bus: messages on the subject of a partition, each a run of that
// partition's deliveries (change × subscription) in commit order. A row's changes share a partition
// (the hash of subscription and row key), so the one worker that owns the partition sees them in
// commit order and delivers them one at a time, as the leader's own stream does.

export interface BusSettings {
  /** The JetStream stream's name; its subjects are `<stream>.p.<partition>`. */
  stream: string;
  partitions: number;
}

export const partitionSubject = (s: BusSettings, partition: number): string => `${s.stream}.p.${partition}`;

/**
 * The partition of a delivery: its subscription and row (its first order key — the new key when the
 * change moved the row to another key); an unordered delivery spreads by its event. FNV-1a over the
 * UTF-16 code units: the same in every process, and a fraction of a hash object's cost per delivery.
 */
export function partitionOf(delivery: CapturedDelivery, partitions: number): number {
  const key = `${delivery.webhookId}\0${delivery.orderKeys?.[0] ?? delivery.eventId}`;
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h >>> 0) % partitions;
}

/** One entry of a message: a delivery, or the news that a subscription's row changed at this point of the stream. */
export type BusItem =
  { kind: 'delivery'; event: CapturedEvent; delivery: CapturedDelivery } | { kind: 'subscriptionChanged'; webhookId: string };

type WireItem = { e: Omit<CapturedEvent, 'committedAt'> & { committedAt: number }; d: CapturedDelivery } | { s: string };

/**
 * An entry as it travels (a message is a JSON array of them, in partition order). A subscription's
 * change (URL, secret, settings) goes to every partition in its place among the deliveries, so that
 * each worker reads the row again before it sends what follows — as the leading tailer's own
 * stream does without the bus.
 */
export function encodeBusItem(item: BusItem): string {
  const wire: WireItem =
    item.kind === 'delivery'
      ? { e: { ...item.event, committedAt: item.event.committedAt.getTime() }, d: item.delivery }
      : { s: item.webhookId };
  return JSON.stringify(wire);
}

/** A message of encoded entries. */
export function encodeBusMessage(encodedItems: readonly string[]): string {
  return `[${encodedItems.join(',')}]`;
}

/**
 * The message id: its first and last delivery and how many entries it holds. A new leader that
 * publishes the same entries again makes the same id, which JetStream's duplicate window drops;
 * one that groups them otherwise makes other ids, and the worker skips what it has (consumer.ts).
 */
export function busMessageId(items: readonly BusItem[]): string | undefined {
  const ids = items.flatMap((i) => (i.kind === 'delivery' ? [i.delivery.id] : []));
  return ids.length === 0 ? undefined : `${ids[0]}~${ids.at(-1)}~${items.length}`;
}

/** The entries back; throws on anything that is not a message of walgate's (a foreign publish on the subject). */
export function decodeBusMessage(text: string): BusItem[] {
  const wire = JSON.parse(text) as unknown;
  if (!Array.isArray(wire)) throw new Error('not a walgate delivery message');
  return wire.map((w: Partial<Extract<WireItem, { e: unknown }>> & { s?: unknown }) => {
    if (typeof w?.s === 'string') return { kind: 'subscriptionChanged', webhookId: w.s };
    if (typeof w?.e?.id !== 'string' || typeof w?.d?.id !== 'string' || typeof w.e.committedAt !== 'number')
      throw new Error('not a walgate delivery message');
    return { kind: 'delivery', event: { ...w.e, committedAt: new Date(w.e.committedAt) }, delivery: w.d };
  });
}
