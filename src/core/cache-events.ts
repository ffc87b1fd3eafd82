import pg from 'pg';
import type { Queryable } from './db/pool.js';
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

const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5000;

/**
 * LISTENs on a dedicated connection and hands each event to `events`; reconnects by itself with
 * a capped backoff (100 ms doubling to 5 s), and after each (re)connection emits `all`.
 */
export class CacheListener {
  #client: pg.Client | undefined;
  #timer: NodeJS.Timeout | undefined;
  #failures = 0;
  #closed = false;

  constructor(
    private readonly connectionString: string,
    private readonly events: CacheEvents,
    private readonly log: Logger,
  ) {}

  /** Resolves once the first attempt is over, connected or not (a failure is retried in the background). */
  start(): Promise<void> {
    return this.#connect();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client({
      connectionString: this.connectionString,
      application_name: 'walgate-cache-listener',
      // A dead peer is noticed (and the listener reconnects) instead of waiting on a silent socket.
      connectionTimeoutMillis: 5000,
      keepAlive: true,
    });
    let lost = false;
    const onLost = (err?: Error) => {
      if (lost) return;
      lost = true;
      if (this.#client === client) this.#client = undefined;
      client.end().catch(() => undefined);
      if (this.#closed) return;
      const delay = Math.min(RECONNECT_MIN_MS * 2 ** this.#failures++, RECONNECT_MAX_MS);
      this.log.warn({ err: err && { message: err.message }, retryInMs: delay }, 'cache listener disconnected; caches fall back to their TTL');
      this.#timer = setTimeout(() => void this.#connect(), delay);
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
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
    } catch (err) {
      onLost(err as Error);
      return;
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#failures = 0;
    this.events.emit({ kind: 'all' });
  }
}
