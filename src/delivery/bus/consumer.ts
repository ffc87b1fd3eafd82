import { randomBytes } from 'node:crypto';
import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  type ConsumerInfo,
  type ConsumerMessages,
  type JsMsg,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../../core/log.js';
import type { Queryable } from '../../core/db/pool.js';
import type { DeliveryStream } from '../../tailer/sink.js';
import type { BusSettings } from './messages.js';
import { decodeBusMessage, partitionSubject, type BusItem } from './messages.js';
import { ReadPosition } from './read-position.js';

// One partition of the bus, read by the worker that holds its lock (worker.ts): its entries go, in
// stream order, into the worker's delivery stream (the same as the leading tailer's without the
// bus), and a message is acknowledged once every delivery in it is settled — delivered with its
// history row, or parked in the retry queue.
//
// Each owner reads through a consumer of its own, made at the point where the newest consumer
// before it stopped acknowledging (its ack floor), before the older ones are removed: a crash at
// any step leaves a floor to start from. No message after a gap is delivered before the gap, so
// per-row order holds across a hand-over. Messages after the floor may have been delivered already
// (acknowledged out of order, or settled by an owner that died before its ack): those, and what
// the partition carries again (read-position.ts), are looked up — a delivery that has a row is
// skipped — and a delivery this owner holds already is skipped too.

/** Messages read ahead of the stream's accepting them, per partition. */
const READ_AHEAD = 64;
/** Far past any settle (WEBHOOK_PARK_AFTER_MS bounds it): JetStream does not redeliver to a living owner. */
const ACK_WAIT_MS = 30 * 60_000;

/** A stream that can be told that a partition changed hands (stream.ts `readAgain`). */
export interface WorkerStream extends DeliveryStream {
  /** Reads again what the retry queue holds unfinished and what subscriptions say now, before a taken partition is read. */
  readAgain(): Promise<void>;
}

export class PartitionConsumer {
  #messages: ConsumerMessages | null = null;
  readonly #buffer: JsMsg[] = [];
  /** The first parts of a message published in parts (publisher.ts), until its last part. */
  #parts: JsMsg[] = [];
  #processing: Promise<void> | null = null;
  #stopped = false;
  /** Deliveries accepted and not yet settled, by id. */
  readonly #holding = new Set<string>();
  #idle: Array<() => void> = [];
  readonly #position = new ReadPosition();
  /** The stream's last message when this owner took over: up to it, an earlier owner may have settled what it reads. */
  #earlierUpTo = 0;

  constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly settings: BusSettings,
    readonly partition: number,
    private readonly stream: WorkerStream,
    private readonly pool: Queryable,
    private readonly log: Logger,
    /** Reading or a look-up failed: the worker starts over (its partitions are read again from their floors). */
    private readonly onFailure: (err: Error) => void,
  ) {}

  /** Makes this owner's consumer at the newest floor, removes the older ones, and starts reading. */
  async start(): Promise<void> {
    const prefix = `walgate-p${this.partition}-`;
    const old: ConsumerInfo[] = [];
    for await (const c of this.jsm.consumers.list(this.settings.stream)) if (c.name.startsWith(prefix)) old.push(c);
    old.sort((a, b) => Date.parse(a.created) - Date.parse(b.created));
    const newest = old.at(-1);
    // A consumer that acknowledged nothing yet has its floor just before where it started.
    const floor = newest ? Math.max(newest.ack_floor.stream_seq, (newest.config.opt_start_seq ?? 1) - 1) : 0;
    this.#earlierUpTo = (await this.jsm.streams.info(this.settings.stream)).state.last_seq;
    const name = `${prefix}${randomBytes(6).toString('hex')}`;
    await this.jsm.consumers.add(this.settings.stream, {
      durable_name: name,
      filter_subject: partitionSubject(this.settings, this.partition),
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: floor + 1,
      ack_wait: nanos(ACK_WAIT_MS),
      max_ack_pending: 16 * READ_AHEAD,
    });
    // Another owner's reader, if one were still alive, ends with its consumer (abort_on_missing_resource).
    for (const c of old) await this.jsm.consumers.delete(this.settings.stream, c.name);
    await this.stream.readAgain();
    if (this.#stopped) return;
    const consumer = await jetstream(this.nc).consumers.get(this.settings.stream, name);
    this.#messages = await consumer.consume({ max_messages: READ_AHEAD, abort_on_missing_resource: true });
    void this.#read(this.#messages);
  }

  /** Stops reading; resolves once everything accepted is settled (and acknowledged). Unread messages stay for the next owner. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#buffer.length = 0;
    await this.#messages?.close().catch(() => undefined);
    await this.#processing;
    if (this.#holding.size > 0) await new Promise<void>((resolve) => this.#idle.push(resolve));
  }

  /** The worker lost its locks: stop at once; nothing more is acknowledged by this owner (its writes cannot commit). */
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
      const messages = this.#whole(this.#buffer.splice(0));
      // Looked up: what an earlier owner may have settled (up to where the stream was when this
      // one took over), what JetStream sends again, and what the partition carries again.
      const ids = messages.flatMap(({ msgs, items }) => {
        const earlier = msgs.some((m) => m.seq <= this.#earlierUpTo || m.redelivered);
        return items.flatMap((i) =>
          i.kind === 'delivery' && (this.#position.mayRepeat(i.event.id, i.delivery.id) || earlier) ? [i.delivery.id] : [],
        );
      });
      const written = new Set<string>();
      if (ids.length > 0) {
        const { rows } = await this.pool.query<{ id: string }>('SELECT id FROM walgate.deliveries WHERE id = ANY($1::text[])', [ids]);
        for (const r of rows) written.add(r.id);
      }
      for (const { msgs, items } of messages) {
        if (this.#stopped) return;
        let left = 1; // released after the loop: a message is acknowledged once all its deliveries are settled
        const one = () => {
          if (--left === 0) for (const m of msgs) m.ack();
        };
        for (const item of items) {
          if (item.kind === 'subscriptionChanged') {
            this.stream.subscriptionChanged(item.webhookId);
            continue;
          }
          const id = item.delivery.id;
          if (written.has(id) || this.#holding.has(id)) continue;
          this.#holding.add(id);
          left++;
          const wait = this.stream.accept(item.event, [item.delivery], () => {
            this.#holding.delete(id);
            one();
            if (this.#holding.size === 0) for (const wake of this.#idle.splice(0)) wake();
          });
          if (wait) await wait;
          if (this.#stopped) return;
        }
        one();
      }
    }
  }

  /** Messages made whole (parts joined) and decoded; one that is not walgate's is dropped, loudly. */
  #whole(read: JsMsg[]): Array<{ msgs: JsMsg[]; items: BusItem[] }> {
    const out: Array<{ msgs: JsMsg[]; items: BusItem[] }> = [];
    for (const m of read) {
      const part = m.headers?.get('Walgate-Part');
      let msgs = [m];
      if (part) {
        this.#parts.push(m);
        const [i, n] = part.split('/').map(Number);
        if (i !== n) continue;
        msgs = this.#parts;
        this.#parts = [];
      }
      try {
        // (One part is read where it lies: joining copies the whole message.)
        const bytes = msgs.length === 1 ? msgs[0]!.data : Buffer.concat(msgs.map((x) => x.data));
        out.push({ msgs, items: decodeBusMessage(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')) });
      } catch (err) {
        this.log.error(
          { partition: this.partition, seq: m.seq, err: (err as Error).message },
          'delivery bus: a message that is not walgate’s, dropped',
        );
        for (const x of msgs) x.term();
      }
    }
    return out;
  }
}
