import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Context } from '../../core/context.js';
import { oneAtATime } from '../../core/db/one-at-a-time.js';
import type { Queryable } from '../../core/db/pool.js';
import { PartitionConsumer, type WorkerStream } from './consumer.js';
import type { BusConfig } from './jetstream.js';

// A delivery worker (`npm run worker`): it owns some of the bus's partitions and delivers what they
// carry through a delivery stream of its own — the leading tailer's, fed from JetStream instead of
// the WAL. A partition has one owner at a time: a session advisory lock on the worker's own
// connection, the same connection through which every write that settles a delivery goes (the
// fence: a worker that lost it can neither commit such a write nor, so, acknowledge).
//
// Every few seconds each worker counts the living workers (their lock connections) and holds its
// share of the partitions: it takes free ones up to its share and hands back the ones above it —
// reading stops, what it accepted is settled and acknowledged, then the lock goes.

const LOCK_APPLICATION = 'walgate-worker-lock';

export interface BusWorkerOptions {
  databaseUrl: string;
  /** How often shares are computed again (default 2 s). */
  rebalanceMs?: number;
}

export class BusWorker {
  readonly #owned = new Map<number, PartitionConsumer>();
  #stream: WorkerStream | null = null;
  #lock: pg.Client | null = null;
  #stopping = false;
  #wake: (() => void) | null = null;
  #running: Promise<void> | null = null;
  readonly #log: Context['log'];

  constructor(
    private readonly ctx: Context,
    /** The delivery engine: a stream per session, its writes fenced by the lock connection. */
    private readonly sink: { open(fenced: Queryable, onFailure: (err: Error) => void): WorkerStream },
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly bus: BusConfig,
    private readonly o: BusWorkerOptions,
  ) {
    this.#log = ctx.log.child({ component: 'bus-worker' });
  }

  /** The partitions this worker reads now. */
  get partitions(): number[] {
    return [...this.#owned.keys()].sort((a, b) => a - b);
  }

  /** Whether a session runs: the lock connection is held (its partitions may be none while others hold them all). */
  get holding(): boolean {
    return this.#lock !== null && this.#stream !== null;
  }

  start(): void {
    this.#running = this.#run();
  }

  /** A graceful stop: reading stops, what waits is parked, what was accepted is settled and acknowledged. */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#wake?.();
    await this.#running;
  }

  async #run(): Promise<void> {
    while (!this.#stopping) {
      let failure: Error | null;
      try {
        failure = await this.#session();
      } catch (err) {
        failure = err as Error;
      }
      if (failure && !this.#stopping) this.#log.error({ err: failure.message }, 'delivery worker session ended; starting again');
      await this.#release(!failure);
      if (!this.#stopping) await sleep(1000);
    }
  }

  /** Holds the lock connection and the shares until stopped (null) or until something fails (the error). */
  async #session(): Promise<Error | null> {
    let failed: Error | null = null;
    // A failure ends reading at once: nothing this session holds can settle any more (its writes go
    // through the lock connection), so nothing waits for that — a hand-back in progress neither.
    const fail = (err: Error) => {
      if (failed) return;
      failed = err;
      for (const c of this.#owned.values()) c.abandon();
      void this.#stream?.close();
      this.#wake?.();
    };
    // The server notices a vanished worker machine within about 25 s (its keepalives), and frees its locks.
    const lock = new pg.Client({
      connectionString: this.o.databaseUrl,
      application_name: LOCK_APPLICATION,
      options: '-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3',
    });
    lock.on('error', fail);
    lock.on('end', () => fail(new Error('the lock connection ended')));
    this.#lock = lock;
    await lock.connect();
    this.#stream = this.sink.open(oneAtATime(lock), fail);
    while (!this.#stopping && !failed) {
      await this.#rebalance(lock, fail);
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
        setTimeout(resolve, this.o.rebalanceMs ?? 2000).unref();
      });
    }
    return failed;
  }

  async #rebalance(lock: pg.Client, fail: (err: Error) => void): Promise<void> {
    const { rows } = await this.ctx.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
      [LOCK_APPLICATION],
    );
    const share = Math.ceil(this.bus.partitions / Math.max(1, rows[0]!.n));
    for (const p of [...this.#owned.keys()].slice(share)) {
      const consumer = this.#owned.get(p)!;
      await consumer.stop();
      await this.nc.flush(); // its acknowledgements are at the server before the next owner reads the floor
      await lock.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [this.#lockName(p)]);
      this.#owned.delete(p);
      this.#log.info({ partition: p }, 'partition handed back');
    }
    // From a place of its own, so that workers starting together do not all try the same partitions.
    const from = Math.floor(Math.random() * this.bus.partitions);
    for (let i = 0; i < this.bus.partitions && this.#owned.size < share && !this.#stopping; i++) {
      const p = (from + i) % this.bus.partitions;
      if (this.#owned.has(p)) continue;
      const got = await lock.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok', [this.#lockName(p)]);
      if (!got.rows[0]!.ok) continue;
      const consumer = new PartitionConsumer(this.nc, this.jsm, this.bus, p, this.#stream!, this.ctx.pool, this.#log, fail);
      this.#owned.set(p, consumer);
      await consumer.start();
      this.#log.info({ partition: p }, 'partition taken');
    }
  }

  /** Ends a session: gracefully (drain, settle, unlock) or, after a failure, at once (the locks go with the connection). */
  async #release(graceful: boolean): Promise<void> {
    const consumers = [...this.#owned.values()];
    this.#owned.clear();
    const stream = this.#stream;
    this.#stream = null;
    if (graceful && stream) {
      await Promise.all([stream.drain(this.ctx.config.webhooks.timeoutMs + 5000), ...consumers.map((c) => c.stop())]);
      await this.nc.flush().catch(() => undefined);
    } else {
      for (const c of consumers) c.abandon();
    }
    await stream?.close();
    await this.#lock?.end().catch(() => undefined);
    this.#lock = null;
  }

  #lockName(partition: number): string {
    return `walgate-bus:${this.bus.stream}:${partition}`;
  }
}
