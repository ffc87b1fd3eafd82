// What a captured change is and where it goes: the tailer hands each change's matches to a
// DeliverySink (the delivery engine, src/delivery/engine.ts), which tells it when they are settled.
import type { Queryable } from '../core/db/pool.js';

/** READ: a row read by a backfill (tailer/backfill/), delivered only to the subscription that asked. */
export type Operation = 'INSERT' | 'UPDATE' | 'DELETE' | 'TRUNCATE' | 'READ';

/** A captured change: its images as to_jsonb renders each value, one JSON fragment per column. */
export interface CapturedEvent {
  /** evt_<commit LSN>_<index in its transaction>: the same every time the change is read. */
  id: string;
  schema: string;
  table: string;
  operation: Operation;
  committedAt: Date;
  columns: string[];
  record: string[];
  old: string[] | null;
  changedFields: string[];
}

/** One subscription's copy of a captured change. */
export interface CapturedDelivery {
  /** del_<event>_<subscription>: unique per pair, so a change read twice is one delivery. */
  id: string;
  webhookId: string;
  eventId: string;
  eventType: Operation;
  /** The subscription's `select` at the change's commit: the body is rendered with it. */
  select: string[] | null;
  /**
   * A row-ordered subscription's delivery: its row's order keys (tailer/order-keys.ts) — one, or
   * two for a change of the primary key (new, old). Deliveries sharing a key are delivered one at
   * a time, in event id (commit) order. Null: unordered.
   */
  orderKeys: string[] | null;
  /**
   * A row-ordered delivery: the event id of its row's change handed to this subscription before
   * it, null when not known (tailer/previous-events.ts). Undefined for unordered deliveries.
   */
  previousEventId?: string | null;
}

/**
 * Where matched changes go. The tailer opens one stream per leadership: `fenced` is the
 * connection that holds the leadership, and every write that lets the slot move on (a delivery's
 * history row, a parked delivery) goes through it — a process that lost leadership has lost
 * that connection, so it can neither commit such a write nor, through the tailer, acknowledge.
 */
export interface DeliverySink {
  /** `onFailure`: a write failed; the tailer ends the session and reads again from the durable position. */
  open(fenced: Queryable, onFailure: (err: Error) => void): DeliveryStream;
}

export interface DeliveryStream {
  /**
   * Takes one change's deliveries. `settled` is called once, when every one of them is delivered
   * with its history row committed, or durably parked in the retry queue. A returned promise
   * means memory is full: reading waits for it.
   */
  accept(event: CapturedEvent, deliveries: CapturedDelivery[], settled: () => void): void | Promise<void>;
  /**
   * A subscription row changed at this point of the stream (its URL or secret may be new). A
   * returned promise: the news is on its way elsewhere (the delivery bus), and the transaction is
   * settled only once it has arrived.
   */
  subscriptionChanged(webhookId: string): void | Promise<void>;
  /**
   * A graceful stop, before close(): nothing new starts; requests in flight finish (or are parked
   * once `timeoutMs` has passed); what waits is parked; and everything is written — so every
   * delivery handed over is settled and nothing a receiver acknowledged is sent again.
   */
  drain(timeoutMs: number): Promise<void>;
  /** Leadership ended: drop what is in memory without settling it (the next leader reads it again). */
  close(): Promise<void>;
}
