import { connect, nanos, type NatsConnection } from '@nats-io/transport-node';
import { DiscardPolicy, jetstreamManager, RetentionPolicy, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import type { BusSettings } from './messages.js';

// The bus's connection and its stream. Only nats-server 2.9 features are used (file storage,
// limits retention, replicas, the duplicate window, durable pull consumers with a start sequence).

export interface BusConfig extends BusSettings {
  /** The servers of one cluster (nats://host:port); the client learns the others from them. */
  servers: string[];
  /** Stream replicas: 3 in production (a cluster of 3 or 5), 1 on one server. */
  replicas: number;
}

/** How long JetStream remembers a message id: a new leader's replay within it is stored once. */
const DUPLICATE_WINDOW_MS = 2 * 60_000;
/** Messages older than this are removed whether delivered or not (far longer than any worker outage should last). */
const MAX_AGE_MS = 7 * 24 * 3600_000;

export async function connectBus(c: BusConfig, name: string): Promise<NatsConnection> {
  const servers = c.servers.map((s) => {
    const u = new URL(s);
    return `${u.hostname}:${u.port || '4222'}`;
  });
  const first = new URL(c.servers[0]!);
  return connect({
    servers,
    ...(first.username ? { user: decodeURIComponent(first.username), pass: decodeURIComponent(first.password) } : {}),
    name,
    // The bus is the operator's own: the cluster's other members, as it gossips them, are fine.
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    timeout: 10_000,
  });
}

/** Creates the stream when it is missing (the tailer and every worker call this at start; the first one wins). */
export async function ensureBusStream(nc: NatsConnection, c: BusConfig): Promise<JetStreamManager> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(c.stream).catch((err: Error) => {
    if (/not found/i.test(err.message)) return null;
    throw err;
  });
  if (!info) {
    await jsm.streams
      .add({
        name: c.stream,
        subjects: [`${c.stream}.p.*`],
        storage: StorageType.File,
        retention: RetentionPolicy.Limits,
        discard: DiscardPolicy.Old,
        num_replicas: c.replicas,
        duplicate_window: nanos(DUPLICATE_WINDOW_MS),
        max_age: nanos(MAX_AGE_MS),
      })
      .catch(async (err: Error) => {
        // Another process created it meanwhile.
        if (!(await jsm.streams.info(c.stream).catch(() => null))) throw err;
      });
  }
  return jsm;
}

/** The bus for a process: its connection and the stream, made when missing. */
export async function openBus(c: BusConfig, name: string): Promise<{ nc: NatsConnection; jsm: JetStreamManager }> {
  const nc = await connectBus(c, name);
  return { nc, jsm: await ensureBusStream(nc, c) };
}
