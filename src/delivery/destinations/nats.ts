import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import type { SendResult } from '../sender.js';
import { failed, published, type BrokerMessage, type BrokerPublisher, type BrokerSettings } from './publisher.js';

// NATS JetStream: a publish waits for the stream's ack (the message is stored), with `Nats-Msg-Id`
// the event id, so the stream's duplicate window drops a message sent again (a retry whose ack was
// lost, a replay after a crash). Works with nats-server 2.9: nothing newer is used.

export async function connectNats(s: BrokerSettings): Promise<BrokerPublisher> {
  const nc = await connect({
    servers: `${s.url.hostname}:${s.url.port || '4222'}`,
    ...(s.username !== undefined ? { user: s.username, pass: s.password ?? '' } : {}),
    ...(s.token !== undefined ? { token: s.token } : {}),
    name: s.name ?? 'walgate',
    timeout: s.timeoutMs,
    // The address was checked before connecting (connections.ts): a cluster's gossiped addresses
    // were not, so the client stays on the one it was given.
    ignoreClusterUpdates: true,
    // A broker that goes away is reconnected to in the background; publishes meanwhile fail by
    // their time-out and are retried on the delivery's schedule.
    reconnect: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 1000,
  });
  return new NatsPublisher(nc, jetstream(nc, { timeout: s.timeoutMs }), s.timeoutMs);
}

class NatsPublisher implements BrokerPublisher {
  #closed = false;

  constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly timeoutMs: number,
  ) {
    void nc.closed().then(() => (this.#closed = true));
  }

  get open(): boolean {
    return !this.#closed && !this.nc.isClosed();
  }

  async publish(m: BrokerMessage): Promise<SendResult> {
    const startedAt = performance.now();
    const h = natsHeaders();
    for (const [name, value] of Object.entries(m.headers)) h.set(name, value);
    try {
      // retries: 0 — a subject no stream listens on answers "no responders" at once; the delivery's
      // own schedule retries, not the client.
      const ack = await this.js.publish(m.subject!, m.body, { msgID: m.messageId, headers: h, timeout: this.timeoutMs, retries: 0 });
      return published(startedAt, JSON.stringify({ stream: ack.stream, seq: ack.seq, duplicate: ack.duplicate }));
    } catch (err) {
      return failed(describeNatsError(err, m.subject!, this.timeoutMs), startedAt);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.nc.close().catch(() => undefined);
  }
}

/** A short reason a consumer of `lastError` can act on. */
export function describeNatsError(err: unknown, subject: string, timeoutMs: number): string {
  const e = err as { name?: string; message?: string; code?: string };
  const name = e.name ?? '';
  const message = e.message ?? String(err);
  // nats.js reports a subject no stream listens on as JetStreamNotEnabled: nothing answered the publish.
  if (name === 'NoRespondersError' || name === 'JetStreamNotEnabled' || /no responders/i.test(message))
    return `NATS: no JetStream stream stores subject ${JSON.stringify(subject)} (or JetStream is not enabled)`;
  if (name === 'TimeoutError' || /timeout/i.test(message)) return `NATS: no ack from JetStream within ${timeoutMs} ms`;
  if (/authorization|authentication/i.test(message)) return 'NATS: the server refused the credentials';
  if (/permission/i.test(message)) return `NATS: no permission to publish to ${JSON.stringify(subject)}`;
  return `NATS: ${name && name !== 'Error' ? `${name}: ` : ''}${message}`;
}
