import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import type { Logger } from '../../core/log.js';
import type { Queryable } from '../../core/db/pool.js';
import type { CapturedDelivery, CapturedEvent, DeliverySink, DeliveryStream } from '../../tailer/sink.js';
import type { BusConfig } from './jetstream.js';
import { encodeBusMessage, encodeSubscriptionChanged, partitionOf, partitionSubject } from './messages.js';

// The leading tailer's side of the bus: every (change × subscription) is published to its
// partition's subject, and a change is settled — the slot may move past it — once JetStream has
// stored every one of its messages.
//
// A partition publishes one message at a time, in commit order, and a publish that fails is tried
// again (same message id) before the next: so a partition's stored order is commit order even
// when a stream leader dies between two publishes (pipelined, the second could be stored and the
// first lost). Partitions publish side by side.

/** Messages held waiting for their publish, over all partitions, before reading the WAL waits. */
const MAX_QUEUED = 20_000;
const PUBLISH_TIMEOUT_MS = 5_000;
const RETRY_MAX_MS = 2_000;

interface Pending {
  subject: string;
  /** The delivery's id (JetStream's duplicate window drops a replay); none for a subscription change (reading one twice is harmless). */
  id: string | undefined;
  body: string;
  published: () => void;
}

export class BusSink implements DeliverySink {
  readonly #js: JetStreamClient;

  constructor(
    nc: NatsConnection,
    private readonly config: BusConfig,
    private readonly log: Logger,
  ) {
    this.#js = jetstream(nc, { timeout: PUBLISH_TIMEOUT_MS });
  }

  /** No write of the tailer's lets the slot move on here (the workers write): `fenced` is not needed. */
  open(_fenced: Queryable, _onFailure: (err: Error) => void): DeliveryStream {
    return new BusPublishing(this.#js, this.config, this.log);
  }
}

export class BusPublishing implements DeliveryStream {
  readonly #queues: Array<Pending[]>;
  readonly #running: boolean[];
  #queued = 0;
  #closed = false;
  #roomWaiters: Array<() => void> = [];
  #idleWaiters: Array<() => void> = [];
  /** Partitions whose head publish is failing now (logged once per outage). */
  readonly #failing = new Set<number>();
  stats = { published: 0, retried: 0 };

  constructor(
    private readonly js: JetStreamClient,
    private readonly config: BusConfig,
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
      const partition = partitionOf(delivery, this.config.partitions);
      this.#queues[partition]!.push({
        subject: partitionSubject(this.config, partition),
        id: delivery.id,
        body: encodeBusMessage(event, delivery),
        published,
      });
      this.#queued++;
      if (!this.#running[partition]) void this.#run(partition);
    }
    if (this.#queued >= MAX_QUEUED) return new Promise((resolve) => this.#roomWaiters.push(resolve));
  }

  subscriptionChanged(webhookId: string): void {
    if (this.#closed) return;
    const body = encodeSubscriptionChanged(webhookId);
    for (let partition = 0; partition < this.config.partitions; partition++) {
      this.#queues[partition]!.push({ subject: partitionSubject(this.config, partition), id: undefined, body, published: () => undefined });
      this.#queued++;
      if (!this.#running[partition]) void this.#run(partition);
    }
  }

  /** Waits (bounded) until every accepted message is stored: all of them settled, nothing to publish again. */
  async drain(timeoutMs: number): Promise<void> {
    if (this.#queued === 0 || this.#closed) return;
    await Promise.race([new Promise<void>((resolve) => this.#idleWaiters.push(resolve)), sleep(timeoutMs)]);
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const q of this.#queues) q.length = 0;
    this.#queued = 0;
    for (const wake of [...this.#roomWaiters.splice(0), ...this.#idleWaiters.splice(0)]) wake();
  }

  async #run(partition: number): Promise<void> {
    this.#running[partition] = true;
    const queue = this.#queues[partition]!;
    try {
      for (let head = queue[0]; head && !this.#closed; head = queue[0]) {
        await this.#publish(partition, head);
        if (this.#closed) return;
        queue.shift();
        this.#queued--;
        this.stats.published++;
        head.published();
        if (this.#queued < MAX_QUEUED) for (const wake of this.#roomWaiters.splice(0)) wake();
      }
      if (this.#queued === 0) for (const wake of this.#idleWaiters.splice(0)) wake();
    } finally {
      this.#running[partition] = false;
    }
  }

  /** Publishes until JetStream stores it (or the stream closes): the next message of the partition waits. */
  async #publish(partition: number, m: Pending): Promise<void> {
    for (let attempt = 0; !this.#closed; attempt++) {
      try {
        await this.js.publish(m.subject, m.body, { ...(m.id ? { msgID: m.id } : {}), timeout: PUBLISH_TIMEOUT_MS, retries: 0 });
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
