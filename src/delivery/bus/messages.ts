import { createHash } from 'node:crypto';
import type { CapturedDelivery, CapturedEvent } from '../../tailer/sink.js';

// What travels on the delivery bus: one message per (change × subscription), on the subject of its
// partition. A row's changes share a partition (the hash of subscription and row key), so the one
// worker that owns the partition sees them in commit order and delivers them one at a time, as the
// leader's own stream does. The message id is the delivery's id (del_<commit LSN>_<index>_<subscription>):
// the same every time the change is read, so JetStream's duplicate window drops a new leader's replay.

export interface BusSettings {
  /** The JetStream stream's name; its subjects are `<stream>.p.<partition>`. */
  stream: string;
  partitions: number;
}

export const partitionSubject = (s: BusSettings, partition: number): string => `${s.stream}.p.${partition}`;

/**
 * The partition of a delivery: its subscription and row (its first order key — the new key when the
 * change moved the row to another key); an unordered delivery spreads by its event.
 */
export function partitionOf(delivery: CapturedDelivery, partitions: number): number {
  const key = `${delivery.webhookId}\0${delivery.orderKeys?.[0] ?? delivery.eventId}`;
  return createHash('sha1').update(key).digest().readUInt32BE(0) % partitions;
}

interface Wire {
  event: Omit<CapturedEvent, 'committedAt'> & { committedAt: number };
  delivery: CapturedDelivery;
}

/** What a worker reads: a delivery, or the news that a subscription's row changed at this point of the stream. */
export type BusMessage =
  { kind: 'delivery'; event: CapturedEvent; delivery: CapturedDelivery } | { kind: 'subscriptionChanged'; webhookId: string };

/**
 * A subscription's row changed (URL, secret, settings): published to every partition in its place
 * among the deliveries, so that each worker reads the row again before it sends what follows — as
 * the leading tailer's own stream does without the bus.
 */
export function encodeSubscriptionChanged(webhookId: string): string {
  return JSON.stringify({ subscriptionChanged: webhookId });
}

export function encodeBusMessage(event: CapturedEvent, delivery: CapturedDelivery): string {
  const wire: Wire = { event: { ...event, committedAt: event.committedAt.getTime() }, delivery };
  return JSON.stringify(wire);
}

/** The message back as the stream takes it; throws on anything that is not one (a foreign publish on the subject). */
export function decodeBusMessage(text: string): BusMessage {
  const wire = JSON.parse(text) as Partial<Wire> & { subscriptionChanged?: unknown };
  if (typeof wire?.subscriptionChanged === 'string') return { kind: 'subscriptionChanged', webhookId: wire.subscriptionChanged };
  if (typeof wire?.event?.id !== 'string' || typeof wire?.delivery?.id !== 'string' || typeof wire.event.committedAt !== 'number')
    throw new Error('not a walgate delivery message');
  return { kind: 'delivery', event: { ...wire.event, committedAt: new Date(wire.event.committedAt) }, delivery: wire.delivery };
}
