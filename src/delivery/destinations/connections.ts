import type { Queryable } from '../../core/db/pool.js';
import { checkHost, type HostLookup } from '../../core/net/address-policy.js';
import type { SendResult } from '../sender.js';
import { readDestination } from '../sql/destinations.js';
import type { DestinationAddress } from './address.js';
import { redact, type Credentials } from './credentials.js';
import { connectNats } from './nats.js';
import { failed, type BrokerPublisher, type BrokerSettings } from './publisher.js';
import { connectRabbitMq } from './rabbitmq.js';
import { messageTarget } from './row-key.js';

// One broker connection per destination, shared by every subscription that publishes to it, in
// this process. Its row is read again every RECHECK_MS, so a PATCH of the destination's URL or
// credentials (made by the api, another process) takes effect within seconds: the old connection
// is closed and a new one made. A connection that broke is made again on the next publish; a
// connect that fails is not cached, and concurrent publishes share one connect in flight.

const RECHECK_MS = 5_000;
/** A destination unused this long gives its connection back. */
const IDLE_MS = 5 * 60_000;
/** At most this many connections at once; the least recently used goes first. */
const MAX_CONNECTIONS = 500;

export interface ConnectionOptions {
  timeoutMs: number;
  allowPrivateNetworks: boolean;
  lookup?: HostLookup;
}

interface Entry {
  version: string;
  checkedAt: number;
  usedAt: number;
  credentials: Credentials;
  publisher: Promise<BrokerPublisher>;
}

export class DestinationConnections {
  readonly #entries = new Map<string, Entry>();
  readonly #refreshing = new Map<string, Promise<Entry>>();
  readonly #sweeper: NodeJS.Timeout;
  #stopped = false;

  constructor(
    private readonly db: Queryable,
    private readonly openCredentials: (sealed: Buffer | null) => Credentials,
    private readonly options: ConnectionOptions,
  ) {
    this.#sweeper = setInterval(() => this.#closeIdle(), IDLE_MS / 5);
    this.#sweeper.unref();
  }

  /** Publishes one attempt's message; every failure (connect, credentials, stream, confirm) is a failed SendResult. */
  async publish(address: DestinationAddress, channel: string, headers: Record<string, string>, body: string): Promise<SendResult> {
    const startedAt = performance.now();
    if (this.#stopped) return failed('stopping', startedAt);
    // `{event}` and `{key}` first: a row key that makes no valid subject fails before any connect.
    const target = messageTarget(address, headers['x-service-event'] ?? '', body);
    if (target instanceof Error) return failed(target.message, startedAt);
    let entry: Entry;
    try {
      entry = await this.#entry(address.destinationId);
    } catch (err) {
      return failed(err instanceof Error ? err.message : String(err), startedAt);
    }
    try {
      const publisher = await entry.publisher;
      const messageId = headers['webhook-id'] ?? headers['x-service-delivery'] ?? '';
      const result = await publisher.publish({
        ...target,
        messageId,
        headers,
        body,
        channel,
      });
      return result.error ? { ...result, error: redact(result.error, entry.credentials) } : result;
    } catch (err) {
      // The connect failed: dropped, so the next attempt connects again.
      if (this.#entries.get(address.destinationId) === entry) this.#entries.delete(address.destinationId);
      return failed(redact(err instanceof Error ? err.message : String(err), entry.credentials), startedAt);
    }
  }

  async #entry(id: string): Promise<Entry> {
    const found = this.#entries.get(id);
    if (found && Date.now() - found.checkedAt < RECHECK_MS && (await isOpen(found))) {
      found.usedAt = Date.now();
      return found;
    }
    // One refresh per destination at a time: two running side by side would each make a
    // connection, and the one the other replaced would never be closed.
    let refresh = this.#refreshing.get(id);
    if (!refresh) {
      refresh = this.#refresh(id).finally(() => this.#refreshing.delete(id));
      this.#refreshing.set(id, refresh);
    }
    return refresh;
  }

  /** Reads the row again; keeps the connection if the row is unchanged and it is open, else replaces it. */
  async #refresh(id: string): Promise<Entry> {
    const row = await readDestination(this.db, id);
    const now = Date.now();
    const current = this.#entries.get(id);
    const version = row ? `${row.updated_at.getTime()} ${row.url}` : '';
    if (row && current && current.version === version && (await isOpen(current))) {
      current.checkedAt = current.usedAt = now;
      return current;
    }
    if (current) {
      this.#entries.delete(id);
      void closeEntry(current);
    }
    if (!row) throw new Error('the destination no longer exists');
    const credentials = this.openCredentials(row.credentials);
    const entry: Entry = {
      version,
      checkedAt: now,
      usedAt: now,
      credentials,
      publisher: this.#connect(row.kind, new URL(row.url), credentials, `walgate ${id}`),
    };
    entry.publisher.catch(() => undefined);
    this.#entries.set(id, entry);
    if (this.#entries.size > MAX_CONNECTIONS) this.#evictOldest();
    return entry;
  }

  async #connect(kind: 'nats' | 'rabbitmq', url: URL, c: Credentials, name: string): Promise<BrokerPublisher> {
    const broker = kind === 'nats' ? 'NATS' : 'RabbitMQ';
    // The address policy, on what the host resolves to now (the API checked it when it was saved).
    const check = await checkHost(url.hostname, this.options.allowPrivateNetworks, this.options.lookup).catch(() => undefined);
    if (!check) throw new Error(`${broker}: the broker's host does not resolve`);
    if (!check.allowed) throw new Error(`${broker}: the broker's address is not public (WEBHOOK_ALLOW_PRIVATE_NETWORKS)`);
    const settings: BrokerSettings = { url, ...c, timeoutMs: this.options.timeoutMs, name };
    try {
      return kind === 'nats' ? await connectNats(settings) : await connectRabbitMq(settings);
    } catch (err) {
      throw new Error(kind === 'nats' ? describeNatsConnect(err) : describeRabbitConnect(err), { cause: err });
    }
  }

  #evictOldest(): void {
    let oldest: [string, Entry] | undefined;
    for (const e of this.#entries) if (!oldest || e[1].usedAt < oldest[1].usedAt) oldest = e;
    if (!oldest) return;
    this.#entries.delete(oldest[0]);
    void closeEntry(oldest[1]);
  }

  #closeIdle(): void {
    const before = Date.now() - IDLE_MS;
    for (const [id, e] of this.#entries) {
      if (e.usedAt > before) continue;
      this.#entries.delete(id);
      void closeEntry(e);
    }
  }

  async close(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#sweeper);
    const entries = [...this.#entries.values()];
    this.#entries.clear();
    await Promise.all(entries.map(closeEntry));
  }
}

async function isOpen(e: Entry): Promise<boolean> {
  try {
    return (await e.publisher).open;
  } catch {
    return false;
  }
}

async function closeEntry(e: Entry): Promise<void> {
  try {
    await (await e.publisher).close();
  } catch {
    // it never connected
  }
}

function describeNatsConnect(err: unknown): string {
  const e = err as { name?: string; message?: string; code?: string; cause?: { code?: string } };
  const message = e.message ?? String(err);
  if (/authorization|authentication/i.test(message)) return 'NATS: the server refused the credentials';
  if (/ECONNREFUSED|connection refused/i.test(message) || e.cause?.code === 'ECONNREFUSED') return 'NATS: connection refused';
  if (/timeout/i.test(message)) return 'NATS: no answer from the server in time';
  return `NATS: ${message}`;
}

function describeRabbitConnect(err: unknown): string {
  const e = err as { message?: string; code?: string };
  const message = e.message ?? String(err);
  if (/ACCESS.REFUSED|403/.test(message)) return 'RabbitMQ: the server refused the credentials';
  if (e.code === 'ECONNREFUSED') return 'RabbitMQ: connection refused';
  // A vhost that does not exist (or the user may not use) closes the connection at open.
  if (/vhost|ConnectionOpenOk/i.test(message)) return 'RabbitMQ: the virtual host does not exist or this user may not use it';
  if (e.code === 'ETIMEDOUT' || /timeout/i.test(message)) return 'RabbitMQ: no answer from the broker in time';
  return `RabbitMQ: ${e.code ? `${e.code}: ` : ''}${message}`;
}
