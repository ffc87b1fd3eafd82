import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { LogicalReplicationService } from 'pg-logical-replication';
import type { Context } from '../core/context.js';
import type { DeliverySink } from './sink.js';
import { keepReconnecting } from '../core/db/reconnect.js';
import { oneAtATime } from '../core/db/one-at-a-time.js';
import { formatLsn, parseLsn, type Lsn } from './lsn.js';
import { RawPgoutputPlugin } from './pgoutput.js';
import { ensurePublication, PUBLICATION } from './publication.js';
import { PreviousEvents } from './previous-events.js';
import { ReplicationSession, type SessionOptions } from './session.js';
import { reportSlotLag, slotHealth } from './slot-health.js';
import { defaultSlotName, prepareSlot } from './slot.js';
import { TypeRegistry } from './types.js';
import { primaryKeyOf } from './order-keys.js';
import { RecordedDeliveries } from './resume.js';
import { ProcessedHighWater, readServerPosition, recordRewind } from './rewind.js';

export interface WalTailerOptions {
  /** The database to tail (the replication connection is opened from it). */
  databaseUrl: string;
  /** Where matched changes go (the delivery engine). */
  sink: DeliverySink;
  slotName?: string;
  /** How often the durable position is reported to Postgres (and recorded), also keeping the connection alive. */
  statusIntervalMs?: number;
  /** How often a standby tries to take over the slot. */
  standbyPollMs?: number;
  /** Cap of the reconnect backoff. */
  retryMaxMs?: number;
  /** How often lag and throughput are logged. */
  reportIntervalMs?: number;
  /** Takes walgate's own logical messages (`walgate.` prefixes, tailer/messages.ts). */
  onReservedMessage?: SessionOptions['onReservedMessage'];
  /** Sees every decoded change of a watched table (backfill windows). */
  onChange?: SessionOptions['onChange'];
  /** A file that keeps the highest position processed across restarts of the tailer (rewind.ts); none by default. */
  stateFile?: string;
}

export type TailerRole = 'starting' | 'leader' | 'standby' | 'stopped';

export interface TailerStatus {
  role: TailerRole;
  slotName: string;
  durableLsn: string | null;
  /** Counts of the current replication session. */
  session: ReplicationSession['stats'] | null;
}

interface Running {
  session: ReplicationSession;
  /**
   * A graceful stop while leading: reading pauses, the stream settles what it holds through the
   * fenced connection, and the settled position is acknowledged and saved — then the session ends.
   */
  drain(): Promise<void>;
}

/**
 * Reads the WAL through the slot and hands changes to the delivery stream (see session.ts).
 *
 * Only one process reads a slot: leadership is a session advisory lock on a dedicated connection,
 * so it ends with that process; the others stand by and poll for it (and meanwhile drain the
 * retry queue, see delivery/worker.ts). That connection is also the fence: every write that lets
 * the slot move on goes through it, so a process whose connection is gone (and with it the lock,
 * which Postgres releases only after aborting what that connection had not committed) can commit
 * none; and it acknowledges only positions those writes made durable, over its own replication
 * connection, which a new leader waits to see gone before it reads position and view (slot.ts). Any failure — Postgres
 * restarting, the replication connection dropping, a write failing — ends the session; the next
 * starts again from the durable position after a capped backoff, with the view saved for it.
 *
 * Acknowledgement is ours alone: pg-logical-replication's automatic acknowledgement and its
 * keepalive timer would report positions merely received (pg-logical-replication#174), so both are
 * off, and we report only what is written.
 */
export class WalTailer {
  readonly #ctx: Context;
  readonly #o: Required<Omit<WalTailerOptions, 'onReservedMessage' | 'onChange' | 'stateFile'>> &
    Pick<WalTailerOptions, 'onReservedMessage' | 'onChange'>;
  /** The highest position processed: a server behind it was restored or failed over (rewind.ts). */
  readonly #highWater: ProcessedHighWater;
  readonly #abort = new AbortController();
  readonly #types: TypeRegistry;
  /** Outlives sessions: a new one (after a failure) still knows the rows' previous changes. */
  readonly #previousEvents = new PreviousEvents();
  /** Whether the last progress report saw the slot's lag past OPERATIONS_SLOT_LAG_BYTES. */
  #lagging = false;
  #role: TailerRole = 'starting';
  #durable: Lsn | null = null;
  #loop: Promise<void> | undefined;
  #running: Running | null = null;
  #stopping = false;

  constructor(ctx: Context, options: WalTailerOptions) {
    this.#ctx = ctx;
    const database = new URL(options.databaseUrl).pathname.slice(1) || 'postgres';
    this.#o = {
      slotName: defaultSlotName(decodeURIComponent(database)),
      statusIntervalMs: 10_000,
      standbyPollMs: 1000,
      retryMaxMs: 10_000,
      reportIntervalMs: 30_000,
      ...options,
    };
    if (!/^[a-z0-9_]{1,63}$/.test(this.#o.slotName)) throw new Error(`invalid slot name ${this.#o.slotName}`);
    this.#types = new TypeRegistry(ctx.pool);
    this.#highWater = new ProcessedHighWater(options.stateFile ?? ctx.config.tailerStateFile);
  }

  status(): TailerStatus {
    return {
      role: this.#role,
      slotName: this.#o.slotName,
      durableLsn: this.#durable === null ? null : formatLsn(this.#durable),
      session: this.#running ? { ...this.#running.session.stats } : null,
    };
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /**
   * Stops reading, lets requests in flight finish (or parks them, bounded), writes what the stream
   * gathered, acknowledges and saves the settled position, then releases the slot: after a clean
   * stop nothing a receiver acknowledged is sent again.
   */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#abort.abort();
    const running = this.#running;
    if (running) await running.drain().catch((err: unknown) => this.#ctx.log.warn({ err }, 'graceful stop: could not settle everything'));
    this.#running?.session.fail(new Error('stopping'));
    await this.#loop;
    this.#role = 'stopped';
  }

  async #run(): Promise<void> {
    const log = this.#ctx.log.child({ component: 'tailer', slot: this.#o.slotName });
    await keepReconnecting(
      async () => {
        let lock: pg.Client | undefined;
        try {
          lock = await this.#lead(log);
          if (!lock) return;
          this.#role = 'leader';
          log.info('leading: reading the slot');
          await this.#stream(lock, log);
        } catch (err) {
          if (!this.#stopping) log.error({ err }, 'replication session ended; restarting from the durable position');
        } finally {
          await lock?.end().catch(() => undefined);
          if (!this.#stopping) this.#role = 'starting';
        }
      },
      { signal: this.#abort.signal, maxMs: this.#o.retryMaxMs },
    );
  }

  /** Waits until this process holds the slot's lock (a standby meanwhile); undefined when stopping. */
  async #lead(log: Context['log']): Promise<pg.Client | undefined> {
    const client = new pg.Client({ connectionString: this.#o.databaseUrl, application_name: 'walgate-tailer-lock' });
    client.on('error', () => undefined);
    await client.connect();
    let announced = false;
    while (!this.#stopping) {
      const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok', [
        `walgate-tailer:${this.#o.slotName}`,
      ]);
      if (rows[0]!.ok) return client;
      this.#role = 'standby';
      if (!announced) log.info('another tailer reads the slot: standing by');
      announced = true;
      await sleep(this.#o.standbyPollMs, undefined, { signal: this.#abort.signal }).catch(() => undefined);
    }
    await client.end().catch(() => undefined);
    return undefined;
  }

  async #stream(lock: pg.Client, log: Context['log']): Promise<void> {
    const { pool, clock } = this.#ctx;
    const walLevel = (await pool.query<{ wal_level: string }>('SHOW wal_level')).rows[0]!.wal_level;
    if (walLevel !== 'logical') {
      throw new Error(
        `wal_level is ${walLevel}: the tailer needs wal_level=logical (ALTER SYSTEM SET wal_level = logical, then restart Postgres)`,
      );
    }
    await ensurePublication(pool);
    await this.#checkRewind(log);
    const start = await prepareSlot(pool, this.#o.databaseUrl, this.#o.slotName, log, this.#ctx.config.tailerSlotFailover);
    this.#durable = start.processedLsn;

    let fail!: (err: Error) => void;
    const failed = new Promise<Error>((resolve) => (fail = resolve));
    const service = new LogicalReplicationService(
      // DateStyle ISO is what values.ts parses; everything else stays as a plain session's, so
      // values render as that session's to_jsonb would.
      { connectionString: this.#o.databaseUrl, options: '-c DateStyle=ISO', application_name: 'walgate-tailer' },
      { acknowledge: { auto: false, timeoutSeconds: 0 }, flowControl: { enabled: true } },
    );
    // The library reports `lsn + 1` as flushed. Postgres skips a transaction whose commit record
    // starts before the flushed position, and a commit record can start exactly where the last one
    // we wrote ended — so we hand it one less, and it reports exactly our position.
    const reportDurable = () => {
      if (this.#durable !== null && this.#durable > 0n) void service.acknowledge(formatLsn(this.#durable - 1n)).catch(() => undefined);
    };
    // Commits before this position may have been partly delivered by an earlier session (resume.ts).
    const startedAt = parseLsn((await pool.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn')).rows[0]!.lsn);
    const recorded = new RecordedDeliveries(startedAt, async (ids) => {
      const { rows } = await pool.query<{ id: string }>('SELECT id FROM walgate.deliveries WHERE id = ANY($1::text[])', [ids]);
      return rows.map((r) => r.id);
    });
    const fenced = oneAtATime(lock);
    const stream = this.#o.sink.open(fenced, (err) => fail(err));
    const session = new ReplicationSession({
      fenced,
      stream,
      slotName: this.#o.slotName,
      log,
      clock,
      types: this.#types,
      previousEvents: this.#previousEvents,
      primaryKey: (oid) => primaryKeyOf(pool, oid),
      processedLsn: start.processedLsn,
      subscriptions: start.subscriptions,
      recorded,
      onEvent: (operation) => this.#ctx.metrics.eventsProduced.inc({ operation }),
      onTruncate: () => this.#ctx.metrics.truncates.inc(),
      ...(this.#o.onReservedMessage ? { onReservedMessage: this.#o.onReservedMessage } : {}),
      ...(this.#o.onChange ? { onChange: this.#o.onChange } : {}),
      onDurable: (lsn) => {
        if (this.#durable === null || lsn > this.#durable) this.#durable = lsn;
        reportDurable();
      },
      onFailure: (err) => fail(err),
    });
    this.#running = {
      session,
      drain: async () => {
        session.pause();
        // The sender's time-out bounds a request; a second beyond it, what is still out is parked.
        await stream.drain(this.#ctx.config.webhooks.timeoutMs + 1000);
        // Settled deliveries moved the durable position (onDurable) as their writes committed.
        reportDurable();
        await session.saveDurable(this.#durable ?? session.durable);
        log.info(
          { position: this.#durable === null ? null : formatLsn(this.#durable) },
          'graceful stop: everything handed over is settled',
        );
      },
    };
    const plugin = new RawPgoutputPlugin(PUBLICATION, () => session.received());

    service.on('data', (_lsn: string, msg) => session.handle(msg));
    service.on('heartbeat', (lsn: string, _time: number, shouldRespond: boolean) => {
      // With nothing in flight, everything up to the keepalive's position has been handled:
      // reporting it lets Postgres release WAL even when no watched table changes.
      const position = parseLsn(lsn);
      if (session.idle && (this.#durable === null || position > this.#durable)) this.#durable = position;
      if (shouldRespond || session.idle) reportDurable();
    });
    service.on('error', (err: Error) => fail(err));
    lock.on('error', () => fail(new Error('lost the connection holding the tailer lock')));
    const statusTimer = setInterval(() => {
      reportDurable();
      // Recorded in walgate.tailer_state too (WAL-logged, unlike the slot's position between checkpoints).
      if (this.#durable !== null) session.saveDurable(this.#durable).catch((err: Error) => session.fail(err));
      this.#keepHighWater(log);
    }, this.#o.statusIntervalMs);
    const reportTimer = setInterval(() => void this.#report(session, log), this.#o.reportIntervalMs);
    if (this.#stopping) session.fail(new Error('stopping'));
    try {
      const streaming = service
        .subscribe(plugin as never, this.#o.slotName, formatLsn(start.processedLsn))
        .then(() => new Error('the replication stream ended'));
      const reason = await Promise.race([streaming, failed]);
      if (!this.#stopping) throw reason;
    } finally {
      clearInterval(statusTimer);
      clearInterval(reportTimer);
      session.fail(new Error('session closing'));
      await stream.close();
      reportDurable();
      await service.destroy().catch(() => undefined);
      this.#running = null;
      this.#keepHighWater(log);
    }
  }

  /**
   * Before reading: a server whose WAL ends before what this process (or, with the state file, an
   * earlier run) processed has been restored or failed over behind it; recorded as a gap.
   */
  async #checkRewind(log: Context['log']): Promise<void> {
    await this.#highWater.load(log);
    if (this.#durable !== null) this.#highWater.advance(this.#durable);
    const server = await readServerPosition(this.#ctx.pool);
    const processed = this.#highWater.rewoundTo(server);
    if (processed !== undefined) await recordRewind(this.#ctx.pool, this.#o.slotName, server, processed, log);
    await this.#highWater.persist();
  }

  #keepHighWater(log: Context['log']): void {
    if (this.#durable !== null) this.#highWater.advance(this.#durable);
    this.#highWater.persist().catch((err: Error) => log.warn({ err }, 'could not write the tailer state file'));
  }

  async #report(session: ReplicationSession, log: Context['log']): Promise<void> {
    try {
      const slot = await slotHealth(this.#ctx.pool, this.#o.slotName, this.#ctx.config.slotWalWarnBytes);
      log.info(
        {
          durableLsn: this.#durable === null ? null : formatLsn(this.#durable),
          lagBytes: slot.lagBytes,
          retainedBytes: slot.retainedBytes,
          walStatus: slot.walStatus,
          safeWalSize: slot.safeWalSize,
          ...session.stats,
        },
        'replication progress',
      );
      // slot.lag to `_operations` subscribers, once per crossing of the bound.
      const lagging = slot.lagBytes !== null && slot.lagBytes > this.#ctx.config.operationsSlotLagBytes;
      if (lagging && !this.#lagging) await reportSlotLag(this.#ctx.pool, slot.lagBytes!, this.#ctx.config.operationsSlotLagBytes);
      this.#lagging = lagging;
      if (slot.retainedBytes !== null && slot.retainedBytes > slot.warnBytes) {
        log.warn(
          { retainedBytes: slot.retainedBytes, limitBytes: slot.warnBytes, maxSlotWalKeepSize: slot.keepBytes },
          'the replication slot retains a lot of WAL: the tailer is behind',
        );
      }
    } catch (err) {
      log.warn({ err }, 'could not read replication lag');
    }
  }
}
