import { AckPolicy, DeliverPolicy, jetstream, type ConsumerMessages, type JsMsg, type JetStreamManager } from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../../core/log.js';
import type { Queryable } from '../../core/db/pool.js';
import type { DeliveryStream } from '../../tailer/sink.js';
import type { BusSettings } from './messages.js';
import { decodeBusMessage, partitionSubject } from './messages.js';

// One partition of the bus, read by the worker that holds its lock (ownership.ts): its messages go,
// in stream order, into the worker's delivery stream (the same as the leading tailer's without the
// bus), and each is acknowledged once its delivery is settled — delivered with its history row, or
// parked in the retry queue.
//
// A new owner reads from the first message the previous one did not acknowledge: the consumer is
// made again at its ack floor, so no message after a gap is delivered before the gap (per-row order
// across a hand-over). Messages after the floor may have been delivered already (acknowledged out
// of order, or settled and the owner died before its ack): a message whose delivery has a row is
// acknowledged without a request.

/** Messages read ahead of the stream's accepting them, per partition. */
const READ_AHEAD = 256;
/** Far past any settle (WEBHOOK_PARK_AFTER_MS bounds it): JetStream does not redeliver to a living owner. */
const ACK_WAIT_MS = 30 * 60_000;

export class PartitionConsumer {
  #messages: ConsumerMessages | null = null;
  readonly #buffer: JsMsg[] = [];
  #processing: Promise<void> | null = null;
  #stopped = false;
  /** Accepted and not yet settled. */
  #outstanding = 0;
  #idle: Array<() => void> = [];

  constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly settings: BusSettings,
    readonly partition: number,
    private readonly stream: DeliveryStream,
    private readonly pool: Queryable,
    private readonly log: Logger,
    /** Reading or a look-up failed: the worker starts over (its partitions are read again from their ack floors). */
    private readonly onFailure: (err: Error) => void,
  ) {}

  /** Makes the consumer again at its ack floor and starts reading. */
  async start(): Promise<void> {
    const name = `walgate-p${this.partition}`;
    const info = await this.jsm.consumers.info(this.settings.stream, name).catch(() => null);
    if (info) await this.jsm.consumers.delete(this.settings.stream, name);
    await this.jsm.consumers.add(this.settings.stream, {
      durable_name: name,
      filter_subject: partitionSubject(this.settings, this.partition),
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: (info?.ack_floor.stream_seq ?? 0) + 1,
      ack_wait: nanos(ACK_WAIT_MS),
      max_ack_pending: 4 * READ_AHEAD,
    });
    if (this.#stopped) return;
    const consumer = await jetstream(this.nc).consumers.get(this.settings.stream, name);
    this.#messages = await consumer.consume({ max_messages: READ_AHEAD });
    void this.#read(this.#messages);
  }

  /** Stops reading; resolves once everything accepted is settled (and acknowledged). Unread messages stay for the next owner. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#buffer.length = 0;
    await this.#messages?.close().catch(() => undefined);
    await this.#processing;
    if (this.#outstanding > 0) await new Promise<void>((resolve) => this.#idle.push(resolve));
  }

  /** The worker lost its locks: stop at once, nothing more is acknowledged by this owner. */
  abandon(): void {
    this.#stopped = true;
    this.#buffer.length = 0;
    void this.#messages?.close().catch(() => undefined);
    for (const wake of this.#idle.splice(0)) wake();
  }

  async #read(messages: ConsumerMessages): Promise<void> {
    try {
      for await (const m of messages) {
        if (this.#stopped) break;
        this.#buffer.push(m);
        this.#processing ??= this.#process()
          .catch((err: Error) => this.#fail(err))
          .finally(() => (this.#processing = null));
        if (this.#buffer.length >= READ_AHEAD) await this.#processing;
      }
      if (!this.#stopped) this.#fail(new Error('the consumer ended'));
    } catch (err) {
      this.#fail(err as Error);
    }
  }

  #fail(err: Error): void {
    if (this.#stopped) return;
    this.log.warn({ partition: this.partition, err: err.message }, 'delivery bus: reading the partition failed');
    this.onFailure(err);
  }

  /** Takes what was read, in order: one look-up of the deliveries that have a row, then into the stream. */
  async #process(): Promise<void> {
    while (this.#buffer.length > 0 && !this.#stopped) {
      const batch = this.#buffer.splice(0);
      const decoded = batch.map((m) => {
        try {
          return decodeBusMessage(m.string());
        } catch (err) {
          this.log.error(
            { partition: this.partition, seq: m.seq, err: (err as Error).message },
            'delivery bus: a message that is not a delivery, dropped',
          );
          m.term();
          return null;
        }
      });
      const ids = decoded.flatMap((d) => (d?.kind === 'delivery' ? [d.delivery.id] : []));
      const { rows } = await this.pool.query<{ id: string }>('SELECT id FROM walgate.deliveries WHERE id = ANY($1::text[])', [ids]);
      const written = new Set(rows.map((r) => r.id));
      for (const [i, m] of batch.entries()) {
        const d = decoded[i];
        if (!d || this.#stopped) continue;
        if (d.kind === 'subscriptionChanged') {
          this.stream.subscriptionChanged(d.webhookId);
          m.ack();
          continue;
        }
        if (written.has(d.delivery.id)) {
          m.ack();
          continue;
        }
        this.#outstanding++;
        const wait = this.stream.accept(d.event, [d.delivery], () => {
          m.ack(); // settled: its row committed through the worker's fenced connection
          if (--this.#outstanding === 0) for (const wake of this.#idle.splice(0)) wake();
        });
        if (wait) await wait;
      }
    }
  }
}
