import { randomId } from '../core/crypto/tokens.js';
import type { Context } from '../core/context.js';
import { PgCode, pgCode } from '../core/db/pool.js';
import { countDeadDeliveries, replayDeadDeliveries, type ReplayFilter } from './sql/history.js';
import { findReplay, finishReplay, insertReplay, replayProgress, takeAbandonedReplay, type ReplayRow } from './sql/replays.js';

// Replays of dead letters as jobs. A small one (up to INLINE_REPLAY_MAX) is done within the
// request; a larger one runs in the background of the api process that accepted it, in batches,
// with its progress and a lease in walgate.replays — a replay of millions outlives any proxy's
// time-out, and one whose process died is taken up again by another (start()).

/** Dead letters a replay moves within the request; more run as a background job. */
export const INLINE_REPLAY_MAX = 1000;
const LEASE_MS = 30_000;
const PROGRESS_MS = 1000;

export interface ReplayView {
  id: string;
  state: 'running' | 'done' | 'failed';
  /** Dead letters in the range when it was asked for. */
  count: number;
  /** Made pending again so far. */
  replayed: number;
  createdAt: string;
  finishedAt: string | null;
}

function replayView(r: ReplayRow): ReplayView {
  return {
    id: r.id,
    state: r.state,
    count: r.count,
    replayed: r.replayed,
    createdAt: r.created_at.toISOString(),
    finishedAt: r.finished_at?.toISOString() ?? null,
  };
}

export class ReplayJobs {
  readonly #running = new Set<Promise<void>>();
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(private readonly ctx: Context) {}

  /**
   * Replays the subscription's dead letters in the range: at once when few, else as a job.
   * Undefined when the subscription is deleted meanwhile.
   */
  async submit(webhookId: string, range: { since?: Date; until?: Date }): Promise<ReplayView | undefined> {
    try {
      return await this.#submit(webhookId, range);
    } catch (err) {
      if (pgCode(err) === PgCode.foreignKeyViolation) return undefined; // its replay row has no subscription to belong to
      throw err;
    }
  }

  async #submit(webhookId: string, range: { since?: Date; until?: Date }): Promise<ReplayView> {
    const filter: ReplayFilter = { webhookId, ...range };
    const now = this.ctx.clock();
    const count = await countDeadDeliveries(this.ctx.pool, filter);
    const row = {
      id: randomId('rpl_'),
      webhook_id: webhookId,
      since: range.since ?? null,
      until: range.until ?? null,
      count,
      created_at: now,
    };
    if (count <= INLINE_REPLAY_MAX) {
      const replayed = await replayDeadDeliveries(this.ctx.pool, filter, now);
      return replayView(await insertReplay(this.ctx.pool, { ...row, state: 'done', replayed, finished_at: this.ctx.clock() }, null));
    }
    const job = await insertReplay(this.ctx.pool, { ...row, state: 'running', replayed: 0, finished_at: null }, this.#leaseEnd());
    this.#spawn(job);
    return replayView(job);
  }

  async get(webhookId: string, id: string): Promise<ReplayView | undefined> {
    const row = id.length <= 64 ? await findReplay(this.ctx.pool, webhookId, id) : undefined;
    return row && replayView(row);
  }

  /** Takes up jobs whose process stopped before finishing them (their lease ran out). */
  start(intervalMs = LEASE_MS / 2): void {
    this.#timer = setInterval(() => void this.#adopt(), intervalMs);
    this.#timer.unref();
  }

  /**
   * Stops taking up jobs and waits a little for those running here; one still running when the
   * process ends keeps its lease until it runs out, and another process finishes it.
   */
  async stop(waitMs = 2000): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await Promise.race([Promise.all(this.#running), new Promise((r) => setTimeout(r, waitMs).unref())]);
  }

  async #adopt(): Promise<void> {
    try {
      const job = await takeAbandonedReplay(this.ctx.pool, this.ctx.clock(), this.#leaseEnd());
      if (job) this.#spawn(job);
    } catch (err) {
      this.ctx.log.warn({ component: 'replay', err: (err as Error).message }, 'could not look for abandoned replays');
    }
  }

  #spawn(job: ReplayRow): void {
    const run = this.#run(job).finally(() => this.#running.delete(run));
    this.#running.add(run);
  }

  async #run(job: ReplayRow): Promise<void> {
    const log = this.ctx.log.child({ component: 'replay', replay: job.id, webhook: job.webhook_id });
    const filter: ReplayFilter = { webhookId: job.webhook_id, since: job.since ?? undefined, until: job.until ?? undefined };
    let replayed = job.replayed;
    // Progress and the lease are written at most once a second, beside the batches.
    const heartbeat = setInterval(() => {
      if (this.#stopped) return; // no longer renewed: the lease runs out, another process takes it up
      void replayProgress(this.ctx.pool, job.id, replayed, this.#leaseEnd()).catch(() => undefined);
    }, PROGRESS_MS);
    try {
      const base = replayed;
      await replayDeadDeliveries(this.ctx.pool, filter, this.ctx.clock(), (n) => (replayed = base + n));
      await finishReplay(this.ctx.pool, job.id, 'done', replayed, this.ctx.clock());
      log.info({ replayed }, 'replay done');
    } catch (err) {
      log.error({ err }, 'replay failed');
      await finishReplay(this.ctx.pool, job.id, 'failed', replayed, this.ctx.clock()).catch(() => undefined);
    } finally {
      clearInterval(heartbeat);
    }
  }

  #leaseEnd(): Date {
    return new Date(this.ctx.clock().getTime() + LEASE_MS);
  }
}
