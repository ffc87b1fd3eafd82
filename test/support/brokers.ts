import { randomBytes } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import amqp from 'amqplib';

// The brokers the destination tests publish to: NATS with JetStream and RabbitMQ, as Redis is
// for the Redis tests — NATS_URL / AMQP_URL when set, else the ones this machine kind runs.

export const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
export const AMQP_URL = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672/';

export const uniqueName = (prefix: string) => `${prefix}_${randomBytes(5).toString('hex')}`;

export interface StoredMessage {
  seq: number;
  subject: string;
  headers: Record<string, string>;
  body: string;
}

/** A JetStream stream of its own (memory storage) on `subjects`, read back by sequence, deleted on close. */
export class TestStream {
  private constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    readonly name: string,
  ) {}

  static async create(subjects: string[]): Promise<TestStream> {
    const url = new URL(NATS_URL);
    const nc = await connect({ servers: `${url.hostname}:${url.port || 4222}` });
    const jsm = await jetstreamManager(nc);
    const name = uniqueName('WALGATE_TEST').toUpperCase();
    await jsm.streams.add({ name, subjects, storage: StorageType.Memory });
    return new TestStream(nc, jsm, name);
  }

  async count(): Promise<number> {
    return (await this.jsm.streams.info(this.name)).state.messages;
  }

  async messages(): Promise<StoredMessage[]> {
    const n = await this.count();
    const out: StoredMessage[] = [];
    for (let seq = 1; seq <= n; seq++) {
      const m = await this.jsm.streams.getMessage(this.name, { seq });
      const headers: Record<string, string> = {};
      for (const k of m!.header.keys()) headers[k] = m!.header.get(k);
      out.push({ seq, subject: m!.subject, headers, body: m!.string() });
    }
    return out;
  }

  async close(): Promise<void> {
    await this.jsm.streams.delete(this.name).catch(() => undefined);
    await this.nc.close();
  }
}

export interface QueuedMessage {
  routingKey: string;
  messageId: string | undefined;
  persistent: boolean;
  headers: Record<string, string>;
  body: string;
}

/** A topic exchange and a queue bound to all of it, both its own, deleted on close. */
export class TestExchange {
  readonly received: QueuedMessage[] = [];

  private constructor(
    private readonly model: amqp.ChannelModel,
    private readonly channel: amqp.Channel,
    readonly exchange: string,
    private readonly queue: string,
  ) {}

  static async create(): Promise<TestExchange> {
    const model = await amqp.connect(AMQP_URL);
    const channel = await model.createChannel();
    const exchange = uniqueName('walgate_test');
    await channel.assertExchange(exchange, 'topic', { durable: false, autoDelete: false });
    const { queue } = await channel.assertQueue('', { exclusive: true });
    await channel.bindQueue(queue, exchange, '#');
    const t = new TestExchange(model, channel, exchange, queue);
    await channel.consume(
      queue,
      (m) => {
        if (!m) return;
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(m.properties.headers ?? {})) headers[k] = Buffer.isBuffer(v) ? v.toString('utf8') : String(v);
        t.received.push({
          routingKey: m.fields.routingKey,
          messageId: m.properties.messageId as string | undefined,
          persistent: m.properties.deliveryMode === 2,
          headers,
          body: m.content.toString('utf8'),
        });
      },
      { noAck: true },
    );
    return t;
  }

  async close(): Promise<void> {
    await this.channel.deleteExchange(this.exchange).catch(() => undefined);
    await this.model.close().catch(() => undefined);
  }
}

/** A broker URL as a destination takes it: no credentials in it. */
export function withoutCredentials(url: string): { url: string; username?: string; password?: string } {
  const u = new URL(url);
  const username = decodeURIComponent(u.username) || undefined;
  const password = decodeURIComponent(u.password) || undefined;
  u.username = '';
  u.password = '';
  return { url: u.toString(), ...(username ? { username } : {}), ...(password ? { password } : {}) };
}
