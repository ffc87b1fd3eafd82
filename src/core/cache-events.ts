import pg from 'pg';
import type { Queryable } from './db/pool.js';
import { keepReconnecting } from './db/reconnect.js';
import type { Logger } from './log.js';

/**
 * Changes that api processes hold in memory (environment settings, signing keys) and revocations
 * made outside them (the CLI) are announced with Postgres NOTIFY on one channel of ours. Each api
 * process LISTENs on a connection of its own and acts at once; the caches' TTL stays the bound
 * when that connection is down. A NOTIFY sent inside a transaction is delivered at its commit.
 */
export const CACHE_CHANNEL = 'walgate_cache';

export type CacheEvent =
  /** Created or changed: its settings and its keys are read again. */
  | { kind: 'environment'; projectId: string; name: string }
  /** Signing keys rotated. */
  | { kind: 'keys'; projectId: string; name: string }
  /** Sessions ended outside the api (`walgate users logout`): each api adds them to its revocation list. */
  | { kind: 'sessions'; sessionIds: string[]; until: string }
  /** The listener (re)connected and may have missed events: everything is read again. */
  | { kind: 'all' };

/** A NOTIFY payload must stay under 8000 bytes: session ids go in batches. */
const SESSIONS_PER_EVENT = 100;

export async function publishCacheEvent(db: Queryable, event: Exclude<CacheEvent, { kind: 'all' }>): Promise<void> {
  const events =
    event.kind === 'sessions'
      ? Array.from({ length: Math.ceil(event.sessionIds.length / SESSIONS_PER_EVENT) }, (_, i) => ({
          ...event,
          sessionIds: event.sessionIds.slice(i * SESSIONS_PER_EVENT, (i + 1) * SESSIONS_PER_EVENT),
        }))
      : [event];
  for (const e of events) await db.query('SELECT pg_notify($1, $2)', [CACHE_CHANNEL, JSON.stringify(e)]);
}

export type CacheEventHandler = (event: CacheEvent) => void | Promise<void>;

/** The handlers of one api process (its caches subscribe when they are built). */
export class CacheEvents {
  readonly #handlers: CacheEventHandler[] = [];

  constructor(private readonly log: Logger) {}

  subscribe(handler: CacheEventHandler): void {
    this.#handlers.push(handler);
  }

  emit(event: CacheEvent): void {
    for (const handler of this.#handlers) {
      Promise.resolve()
        .then(() => handler(event))
        .catch((err: unknown) => this.log.warn({ err: { message: (err as Error).message }, event: event.kind }, 'cache event not applied'));
    }
  }
}

/**
 * LISTENs on a dedicated connection and hands each event to `events`; reconnects by itself with
 * the one reconnect policy (db/reconnect.ts, 100 ms doubling to 5 s), and after each (re)connection
 * emits `all`, since events sent meanwhile were missed.
 */
export class CacheListener {
  readonly #stop = new AbortController();
  #loop: Promise<void> | undefined;

  constructor(
    private readonly connectionString: string,
    private readonly events: CacheEvents,
    private readonly log: Logger,
  ) {}

  /** Resolves once the first attempt is over, connected or not (a failure is retried in the background). */
  start(): Promise<void> {
    return new Promise((firstAttemptOver) => {
      this.#loop = keepReconnecting(() => this.#listen(firstAttemptOver), { signal: this.#stop.signal, minMs: 100, maxMs: 5000 });
    });
  }

  async close(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
  }

  /** One connection's life: it resolves when the connection is lost (or the listener closed). */
  async #listen(connected: () => void): Promise<void> {
    const client = new pg.Client({
      connectionString: this.connectionString,
      application_name: 'walgate-cache-listener',
      // A dead peer is noticed (and the listener reconnects) instead of waiting on a silent socket.
      connectionTimeoutMillis: 5000,
      keepAlive: true,
    });
    const lost = new Promise<Error | undefined>((resolve) => {
      client.on('error', resolve);
      client.on('end', () => resolve(undefined));
    });
    const closed = new Promise<void>((resolve) => this.#stop.signal.addEventListener('abort', () => resolve(), { once: true }));
    client.on('notification', (msg) => {
      if (msg.channel !== CACHE_CHANNEL || !msg.payload) return;
      try {
        this.events.emit(JSON.parse(msg.payload) as CacheEvent);
      } catch {
        this.log.warn({ payload: msg.payload.slice(0, 200) }, 'unreadable cache event');
      }
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CACHE_CHANNEL}`);
      connected();
      this.events.emit({ kind: 'all' });
      const err = await Promise.race([lost, closed.then(() => undefined)]);
      if (!this.#stop.signal.aborted)
        this.log.warn({ err: err && { message: err.message } }, 'cache listener disconnected; caches fall back to their TTL');
    } catch (err) {
      connected();
      this.log.warn({ err: { message: (err as Error).message } }, 'cache listener could not connect; caches fall back to their TTL');
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}
