import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
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

  static async create(subjects: string[], o: { natsUrl?: string; storage?: 'memory' | 'file' } = {}): Promise<TestStream> {
    const url = new URL(o.natsUrl ?? NATS_URL);
    const nc = await connect({
      servers: `${url.hostname}:${url.port || 4222}`,
      ...(url.username ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } : {}),
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
    });
    const jsm = await jetstreamManager(nc);
    const name = uniqueName('WALGATE_TEST').toUpperCase();
    await jsm.streams.add({ name, subjects, storage: o.storage === 'file' ? StorageType.File : StorageType.Memory });
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

/** A nats-server of the test's own (JetStream, file storage in a temporary folder) that it can stop and start again. */
export class OwnNatsServer {
  #process: ChildProcess | null = null;

  private constructor(
    readonly port: number,
    private readonly storeDir: string,
    private readonly args: string[],
  ) {}

  /** `args`: more nats-server options, e.g. `--user u --pass p` or `--auth <token>`. */
  static async start(args: string[] = [], port?: number): Promise<OwnNatsServer> {
    port ??= await freePort();
    const server = new OwnNatsServer(port, await mkdtemp(path.join(tmpdir(), 'walgate-nats-')), args);
    await server.resume();
    return server;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  /** Starts it (again, on the same port and store) and waits until it accepts connections. */
  async resume(): Promise<void> {
    const bin = process.env.NATS_SERVER ?? 'nats-server';
    this.#process = spawn(bin, ['-js', '-a', '127.0.0.1', '-p', String(this.port), '-sd', this.storeDir, ...this.args], {
      stdio: 'ignore',
    });
    for (let i = 0; i < 100; i++) {
      if (await answers(this.port)) return;
      await sleep(50);
    }
    throw new Error(`${bin} did not start on port ${this.port}`);
  }

  /** Stops it hard (SIGKILL): clients see the connection drop, nothing is drained. */
  async stop(): Promise<void> {
    const p = this.#process;
    this.#process = null;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise((resolve) => p.once('exit', resolve));
    p.kill('SIGKILL');
    await exited;
  }

  async close(): Promise<void> {
    await this.stop();
    await rm(this.storeDir, { recursive: true, force: true });
  }
}

/** Three (or more) nats-servers of the test's own on loopback ports, routed into one JetStream cluster. */
export class NatsCluster {
  private constructor(readonly servers: OwnNatsServer[]) {}

  static async start(size = 3): Promise<NatsCluster> {
    const ports = await Promise.all(Array.from({ length: size }, () => freePort()));
    const routes = await Promise.all(Array.from({ length: size }, () => freePort()));
    const servers = await Promise.all(
      ports.map((port, i) =>
        OwnNatsServer.start(
          [
            ...['--name', `n${i + 1}`, '--cluster_name', 'walgate-test'],
            ...['--cluster', `nats://127.0.0.1:${routes[i]}`],
            ...['--routes', routes.map((r) => `nats://127.0.0.1:${r}`).join(',')],
          ],
          port,
        ),
      ),
    );
    return new NatsCluster(servers);
  }

  /** DELIVERY_BUS: every server's URL. */
  get urls(): string {
    return this.servers.map((s) => s.url).join(',');
  }

  /** A connection to the cluster (any server) for the test's own questions. */
  async connect(): Promise<NatsConnection> {
    return connect({ servers: this.servers.map((s) => `127.0.0.1:${s.port}`), maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  }

  /** The server (n1, n2, …) that leads `stream`, once the cluster has one. */
  async streamLeader(jsm: JetStreamManager, stream: string, timeoutMs = 30_000): Promise<OwnNatsServer> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const leader = await jsm.streams
        .info(stream)
        .then((i) => i.cluster?.leader)
        .catch(() => undefined);
      if (leader) return this.servers[Number(leader.slice(1)) - 1]!;
      if (Date.now() > until) throw new Error(`no leader for stream ${stream}`);
      await sleep(200);
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.close()));
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}
