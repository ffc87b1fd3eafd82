import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from '../core/context.js';
import {
  earliestAuthExpiry,
  EVENTS_START,
  oldestHistory,
  expirePausedBacklog,
  pruneAuthEvents,
  pruneOperations,
  pruneDeliveries,
  pruneDeliveryMinutes,
  pruneMail,
  pruneEvents,
  pruneRateLimits,
  pruneRevokedSessions,
  pruneSessions,
  pruneVerificationCodes,
  type EventCursor,
} from './store.js';

// Retention: removes, by age, what every table that grows with traffic no longer needs. A pass
// works through each table in small batches (each one short statement, so no lock is held for
// long and no transaction grows with the backlog), and passes repeat at least every
// min(retention / 2, 10 min). Any number of processes may prune at once: batches skip rows that
// another one has locked.
//
// The tailer daemon prunes the delivery history it produces; the api daemon prunes the auth rows
// it produces (an install that runs the api alone, for auth only, stays bounded too).

/** What a pruner looks after: delivery history (tailer), auth rows (api). `npm start` does both. */
export type RetentionScope = 'history' | 'auth';

export interface PrunerOptions {
  scopes: readonly RetentionScope[];
  /** Rows per statement. */
  batchSize?: number;
  /** Time between passes (default: min(shorter window / 2, 10 min)). */
  intervalMs?: number;
  /** Pause between batches, so a large backlog is worked off without hogging Postgres. */
  pauseMs?: number;
}

/** Rows removed in one pass, by table (deliveries by status). */
export type PassReport = Record<string, number>;

const TEN_MINUTES = 10 * 60 * 1000;
/** Batches' worth of events kept (still needed) that one pass reads past before it leaves the rest to the next. */
const KEPT_PER_PASS = 10;

export function passInterval(retention: { deliveredMs: number; deadMs: number }): number {
  return Math.min(Math.min(retention.deliveredMs, retention.deadMs) / 2, TEN_MINUTES);
}

export class Pruner {
  readonly #ctx: Context;
  readonly #scopes: ReadonlySet<RetentionScope>;
  readonly #batch: number;
  readonly #intervalMs: number;
  readonly #pauseMs: number;
  readonly #abort = new AbortController();
  #loop: Promise<void> | undefined;
  /** Where the events pass stands (see #pruneHistory). */
  #eventsCursor: EventCursor = EVENTS_START;

  constructor(ctx: Context, options: PrunerOptions) {
    this.#ctx = ctx;
    this.#scopes = new Set(options.scopes);
    this.#batch = options.batchSize ?? 1000;
    this.#intervalMs = options.intervalMs ?? passInterval(ctx.config.retention);
    this.#pauseMs = options.pauseMs ?? 10;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Stops after the statement in flight (each is short). Idempotent. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#loop;
  }

  async #run(): Promise<void> {
    const log = this.#ctx.log.child({ component: 'retention' });
    while (!this.#abort.signal.aborted) {
      try {
        await this.runPass();
      } catch (err) {
        if (!this.#abort.signal.aborted) log.warn({ err: (err as Error).message }, 'retention pass failed; retrying at the next one');
      }
      // Jitter, so processes started together do not pass in lockstep.
      const wait = this.#intervalMs * (0.9 + Math.random() * 0.2);
      await sleep(wait, undefined, { signal: this.#abort.signal }).catch(() => undefined);
    }
  }

  /** One pass over every table of the pruner's scopes; logs and counts what it removed. */
  async runPass(): Promise<PassReport> {
    const started = Date.now();
    const removed: PassReport = {};
    const add = (table: string, n: number, status?: string) => {
      const key = status ? `${table}:${status}` : table;
      removed[key] = (removed[key] ?? 0) + n;
      if (n > 0) this.#ctx.metrics.retentionRemoved.inc(status ? { table, status } : { table }, n);
    };
    if (this.#scopes.has('history')) await this.#pruneHistory(add);
    if (this.#scopes.has('auth')) await this.#pruneAuth(add);
    await this.#recordOldest();
    this.#ctx.log.info({ component: 'retention', removed, ms: Date.now() - started }, 'retention pass');
    return removed;
  }

  async #pruneHistory(add: (table: string, n: number, status?: string) => void): Promise<void> {
    const { pool, config } = this.#ctx;
    const now = this.#ctx.clock().getTime();
    // First a paused backlog's old deliveries become dead letters (they are pruned as such, later).
    const pausedBefore = new Date(now - config.webhooks.pausedBacklogMs);
    let expired = 0;
    await this.#batches(async () => {
      const n = await expirePausedBacklog(pool, pausedBefore, this.#batch);
      expired += n;
      return n;
    });
    if (expired > 0) this.#ctx.log.info({ component: 'retention', expired }, 'paused backlog past its bound: dead letters now');
    await this.#batches(async () => {
      const n = await pruneDeliveryMinutes(pool, new Date(now - config.retention.deliveredMs), this.#batch);
      add('delivery_minutes', n);
      return n;
    });
    for (const [status, windowMs] of [
      ['delivered', config.retention.deliveredMs],
      ['dead', config.retention.deadMs],
    ] as const) {
      const before = new Date(now - windowMs);
      await this.#batches(async () => {
        const r = await pruneDeliveries(pool, status, before, this.#batch);
        add('deliveries', r.deliveries, status);
        add('delivery_attempts', r.attempts);
        return r.deliveries;
      });
    }
    // After the deliveries: the events they alone needed are now free to go. Old events that an
    // unfinished delivery still needs (a backlog) are read past, at most KEPT_PER_PASS batches'
    // worth per pass; the next pass carries on from there, so a large backlog costs a bounded
    // amount of work per pass rather than a read of all of it every time.
    const before = new Date(now - config.retention.deliveredMs);
    let kept = 0;
    await this.#batches(async () => {
      const r = await pruneEvents(pool, before, this.#eventsCursor, this.#batch);
      add('events', r.removed);
      kept += r.scanned - r.removed;
      // At the end of the old events, the next pass starts again from the oldest.
      this.#eventsCursor = r.scanned < this.#batch || !r.last ? EVENTS_START : r.last;
      return kept >= KEPT_PER_PASS * this.#batch ? 0 : r.scanned;
    });
  }

  async #pruneAuth(add: (table: string, n: number) => void): Promise<void> {
    const { pool } = this.#ctx;
    const now = this.#ctx.clock();
    await this.#batches(async () => {
      const r = await pruneSessions(pool, now, this.#batch);
      add('sessions', r.sessions);
      add('refresh_tokens', r.refreshTokens);
      return r.sessions;
    });
    await this.#batches(async () => this.#counted('verification_codes', add, await pruneVerificationCodes(pool, now, this.#batch)));
    await this.#batches(async () => this.#counted('revoked_sessions', add, await pruneRevokedSessions(pool, now, this.#batch)));
    await this.#batches(async () => this.#counted('rate_limits', add, await pruneRateLimits(pool, now, this.#batch)));
    const { authEventsRetentionMs, operationsRetentionMs, mail } = this.#ctx.config;
    const eventsBefore = new Date(now.getTime() - authEventsRetentionMs);
    await this.#batches(async () => this.#counted('auth_events', add, await pruneAuthEvents(pool, eventsBefore, this.#batch)));
    const operationsBefore = new Date(now.getTime() - operationsRetentionMs);
    await this.#batches(async () => this.#counted('operations', add, await pruneOperations(pool, operationsBefore, this.#batch)));
    const mailBefore = new Date(now.getTime() - mail.retentionMs);
    await this.#batches(async () => this.#counted('mail_outbox', add, await pruneMail(pool, mailBefore, this.#batch)));
  }

  #counted(table: string, add: (table: string, n: number) => void, n: number): number {
    add(table, n);
    return n;
  }

  /** Runs a batch until one comes back short (the backlog is done) or the pruner stops. */
  async #batches(batch: () => Promise<number>): Promise<void> {
    while (!this.#abort.signal.aborted) {
      if ((await batch()) < this.#batch) return;
      await sleep(this.#pauseMs);
    }
  }

  async #recordOldest(): Promise<void> {
    const { pool, metrics } = this.#ctx;
    const now = this.#ctx.clock().getTime();
    const set = (labels: { table: string; status?: string }, at: Date | null) => {
      if (at) metrics.retentionOldest.set(labels, (now - at.getTime()) / 1000);
      else metrics.retentionOldest.remove(labels);
    };
    if (this.#scopes.has('history')) {
      const o = await oldestHistory(pool);
      set({ table: 'deliveries', status: 'delivered' }, o.delivered);
      set({ table: 'deliveries', status: 'dead' }, o.dead);
      set({ table: 'delivery_attempts' }, o.attempts);
      set({ table: 'events' }, o.events);
    }
    if (this.#scopes.has('auth')) {
      const e = await earliestAuthExpiry(pool);
      set({ table: 'sessions' }, e.sessions);
      set({ table: 'verification_codes' }, e.verificationCodes);
      set({ table: 'revoked_sessions' }, e.revokedSessions);
      set({ table: 'rate_limits' }, e.rateLimits);
    }
  }
}
