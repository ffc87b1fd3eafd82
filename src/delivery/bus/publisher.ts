import { setTimeout as sleep } from 'node:timers/promises';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import type { Logger } from '../../core/log.js';
import type { Queryable } from '../../core/db/pool.js';
import type { CapturedDelivery, CapturedEvent, DeliverySink, DeliveryStream } from '../../tailer/sink.js';
import type { BusConfig } from './jetstream.js';
import { busMessageId, encodeBusItem, encodeBusMessage, partitionOf, partitionSubject, type BusItem } from './messages.js';

// The leading tailer's side of the bus: every (change × subscription) goes to its partition, and a
// change is settled — the slot may move past it — once JetStream has stored all of its deliveries.
//
// A partition publishes one message at a time, in commit order: what was queued while the last
// publish ran goes in the next message (group commit), and a publish that fails is tried again,
// with the same message id, before the next. So a partition's stored order is commit order even
// when a stream leader dies between two publishes (pipelined, the second could be stored and the
// first lost). Partitions publish side by side.

/** Entries held waiting for their publish, over all partitions, before reading the WAL waits (and TAILER_MAX_HELD_BYTES of them). */
const MAX_QUEUED = 20_000;
/** A message's entries at most, and its bytes at most (well under NATS's default max_payload of 1 MB). */
const MAX_ITEMS = 500;
const MAX_BYTES = 256 * 1024;
/** An entry larger than this travels in parts of this size (header Walgate-Part: i/n), read back whole. */
const PART_BYTES = 512 * 1024;
const PUBLISH_TIMEOUT_MS = 5_000;
const RETRY_MAX_MS = 2_000;

interface Pending {
  item: BusItem;
  encoded: string;
  published: () => void;
}

export class BusSink implements DeliverySink {
  readonly #js: JetStreamClient;

  constructor(
    nc: NatsConnection,
    private readonly config: BusConfig,
    private readonly maxHeldBytes: number,
    private readonly log: Logger,
  ) {
    this.#js = jetstream(nc, { timeout: PUBLISH_TIMEOUT_MS });
  }

  /** No write of the tailer's lets the slot move on here (the workers write): `fenced` is not needed. */
  open(_fenced: Queryable, _onFailure: (err: Error) => void): DeliveryStream {
    return new BusPublishing(this.#js, this.config, this.maxHeldBytes, this.log);
  }
}

export class BusPublishing implements DeliveryStream {
  readonly #queues: Array<Pending[]>;
  readonly #running: boolean[];
  #queued = 0;
  /** Encoded bytes (as string length) of the queued entries. */
  #queuedBytes = 0;
  #closed = false;
  #roomWaiters: Array<() => void> = [];
  #idleWaiters: Array<() => void> = [];
  /** Partitions whose head publish is failing now (logged once per outage). */
  readonly #failing = new Set<number>();
  stats = { published: 0, messages: 0, retried: 0 };

  constructor(
    private readonly js: JetStreamClient,
    private readonly config: BusConfig,
    private readonly maxHeldBytes: number,
    private readonly log: Logger,
  ) {
    this.#queues = Array.from({ length: config.partitions }, () => []);
    this.#running = new Array<boolean>(config.partitions).fill(false);
  }

  accept(event: CapturedEvent, deliveries: CapturedDelivery[], settled: () => void): void | Promise<void> {
    if (this.#closed) return;
    if (deliveries.length === 0) return settled();
    let left = deliveries.length;
    const published = () => {
      if (--left === 0) settled();
    };
    for (const delivery of deliveries) {
      const item: BusItem = { kind: 'delivery', event, delivery };
      this.#push(partitionOf(delivery, this.config.partitions), { item, encoded: encodeBusItem(item), published });
    }
    if (this.#full) return new Promise((resolve) => this.#roomWaiters.push(resolve));
  }

  get #full(): boolean {
    return this.#queued >= MAX_QUEUED || this.#queuedBytes >= this.maxHeldBytes;
  }

  /** The news goes to every partition in its place; the promise (the transaction's settlement waits for it) once all have it. */
  subscriptionChanged(webhookId: string): Promise<void> | void {
    if (this.#closed) return;
    const item: BusItem = { kind: 'subscriptionChanged', webhookId };
    const encoded = encodeBusItem(item);
    let left = this.config.partitions;
    return new Promise((resolve) => {
      for (let p = 0; p < this.config.partitions; p++) this.#push(p, { item, encoded, published: () => --left === 0 && resolve() });
    });
  }

  /** Waits (bounded) until every accepted entry is stored: all of them settled, nothing to publish again. */
  async drain(timeoutMs: number): Promise<void> {
    if (this.#queued === 0 || this.#closed) return;
    await Promise.race([new Promise<void>((resolve) => this.#idleWaiters.push(resolve)), sleep(timeoutMs)]);
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const q of this.#queues) q.length = 0;
    this.#queued = 0;
    this.#queuedBytes = 0;
    for (const wake of [...this.#roomWaiters.splice(0), ...this.#idleWaiters.splice(0)]) wake();
  }

  #push(partition: number, entry: Pending): void {
    this.#queues[partition]!.push(entry);
    this.#queued++;
    this.#queuedBytes += entry.encoded.length;
    if (!this.#running[partition]) void this.#run(partition);
  }

  async #run(partition: number): Promise<void> {
    this.#running[partition] = true;
    const queue = this.#queues[partition]!;
    try {
      while (queue.length > 0 && !this.#closed) {
        let n = 0;
        let bytes = 0;
        while (n < queue.length && n < MAX_ITEMS && (n === 0 || bytes + queue[n]!.encoded.length < MAX_BYTES))
          bytes += queue[n++]!.encoded.length;
        const batch = queue.slice(0, n);
        await this.#publish(partition, batch);
        if (this.#closed) return;
        queue.splice(0, n);
        this.#queued -= n;
        this.#queuedBytes -= bytes;
        this.stats.published += n;
        this.stats.messages++;
        for (const entry of batch) entry.published();
        if (!this.#full) for (const wake of this.#roomWaiters.splice(0)) wake();
      }
      if (this.#queued === 0) for (const wake of this.#idleWaiters.splice(0)) wake();
    } finally {
      this.#running[partition] = false;
    }
  }

  /** Publishes one message (in parts when it is too large for one) until JetStream stores it, or the stream closes. */
  async #publish(partition: number, batch: Pending[]): Promise<void> {
    const subject = partitionSubject(this.config, partition);
    const body = Buffer.from(encodeBusMessage(batch.map((e) => e.encoded)));
    const id = busMessageId(batch.map((e) => e.item));
    // Cut by bytes: a character split across two parts is whole again when the worker joins them.
    const parts = Math.max(1, Math.ceil(body.length / PART_BYTES));
    for (let i = 0; i < parts && !this.#closed; i++) {
      const h = parts > 1 ? natsHeaders() : undefined;
      h?.set('Walgate-Part', `${i + 1}/${parts}`);
      const msgID = id && parts > 1 ? `${id}#${i + 1}` : id;
      await this.#publishOne(partition, subject, parts > 1 ? body.slice(i * PART_BYTES, (i + 1) * PART_BYTES) : body, msgID, h);
    }
  }

  async #publishOne(
    partition: number,
    subject: string,
    data: Uint8Array,
    msgID: string | undefined,
    h: ReturnType<typeof natsHeaders> | undefined,
  ): Promise<void> {
    for (let attempt = 0; !this.#closed; attempt++) {
      try {
        await this.js.publish(subject, data, {
          ...(msgID ? { msgID } : {}),
          ...(h ? { headers: h } : {}),
          timeout: PUBLISH_TIMEOUT_MS,
          retries: 0,
        });
        if (this.#failing.delete(partition)) this.log.info({ partition }, 'delivery bus: publishing again');
        return;
      } catch (err) {
        this.stats.retried++;
        if (!this.#failing.has(partition)) {
          this.#failing.add(partition);
          this.log.warn({ partition, err: (err as Error).message }, 'delivery bus: a publish failed; trying again before the next');
        }
        await sleep(Math.min(RETRY_MAX_MS, 100 * 2 ** Math.min(attempt, 5)));
      }
    }
  }
}
