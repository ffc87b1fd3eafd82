import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from '../../core/context.js';
import { randomId } from '../../core/crypto/tokens.js';
import type { Change } from '../events.js';
import type { ReservedMessage } from '../messages.js';
import { changeRows } from '../order-keys.js';
import type { InjectedRows } from '../injection.js';
import { describeBackfillTable, isQueryProblem, readPage, type BackfillTable } from './page.js';
import { backfillTarget, failBackfill, recordPage, runningBackfills, type RunningBackfill } from './store.js';
import { emitWatermark, parseWatermark } from './watermarks.js';
import { WatermarkWindow } from './window.js';

// The tailer side of backfills (docs/backfills.md). Only the process that reads the slot runs
// them: a page's watermarks must come back through its own replication session, which hands the
// page's rows on at the high watermark (session.ts #inject). Per backfill one page is in flight:
// read, handed on, settled (delivered or parked), recorded — then the next. Progress is recorded
// only after a page is settled, so a crash anywhere reads that page again (duplicates, never a
// hole); a page whose high watermark does not come back in time is read again as well.

export interface BackfillRunnerOptions {
  /** Whether this process reads the slot now (tailer.status().role === 'leader'). */
  isLeader: () => boolean;
  pageRows: number;
  pageBytes: number;
  concurrency: number;
  /** How often unfinished backfills are looked for. */
  pollMs?: number;
  /** How long a page waits for its high watermark and its rows to settle before it is read again. */
  pageTimeoutMs?: number;
}

type PageResult = { kind: 'settled'; handed: number } | { kind: 'again'; reason: string };

interface OpenPage {
  table: BackfillTable;
  webhookId: string;
  window: WatermarkWindow;
  /** Ends the wait of #page: the rows settled, or the page must be read again. */
  done: (result: PageResult) => void;
}

const tableKey = (schema: string, table: string) => `${schema}\0${table}`;

export class BackfillRunner {
  readonly #ctx: Context;
  readonly #o: Required<BackfillRunnerOptions>;
  readonly #abort = new AbortController();
  /** Pages whose watermarks are out, by page token. */
  readonly #pages = new Map<string, OpenPage>();
  /** Pages between their low and high watermark, by table: the changes they must look at. */
  readonly #collecting = new Map<string, Set<OpenPage>>();
  readonly #active = new Map<string, Promise<void>>();
  #loop: Promise<void> | undefined;

  constructor(ctx: Context, options: BackfillRunnerOptions) {
    this.#ctx = ctx;
    this.#o = { pollMs: 500, pageTimeoutMs: 10 * 60_000, ...options };
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Stops reading pages; a page in flight is abandoned (read again by whoever leads next). */
  async stop(): Promise<void> {
    this.#abort.abort();
    for (const page of this.#pages.values()) page.done({ kind: 'again', reason: 'stopping' });
    await this.#loop;
    await Promise.allSettled(this.#active.values());
  }

  /** The session's hook for walgate's own messages: a page's watermarks. */
  readonly onReservedMessage = (m: ReservedMessage): InjectedRows | undefined => {
    const w = parseWatermark(m.message.prefix, m.message.content);
    const page = w && this.#pages.get(w.page);
    if (!w || !page || m.commitLsn === null) return undefined;
    const key = tableKey(page.table.schema, page.table.table);
    if (w.mark === 'low') {
      page.window.low();
      const set = this.#collecting.get(key) ?? new Set();
      set.add(page);
      this.#collecting.set(key, set);
      return undefined;
    }
    this.#stopCollecting(key, page);
    const outcome = page.window.high();
    if (outcome.kind === 'retry') {
      page.done({ kind: 'again', reason: outcome.reason });
      return undefined;
    }
    if (outcome.dropped > 0) this.#ctx.metrics.backfillRowsDropped.inc(outcome.dropped);
    const { schema, table, columns } = page.table;
    const indexOf = new Map(columns.map((c, i) => [c, i]));
    const committedAt = m.committedAt ?? this.#ctx.clock();
    return {
      webhookId: page.webhookId,
      changes: outcome.rows.map((r) => ({
        change: {
          eventId: '',
          operation: 'READ',
          schema,
          table,
          committedAt,
          record: { names: columns, fragments: r.fragments, indexOf },
          old: null,
          changedFields: [],
        },
        rows: [r.identity],
      })),
      onSettled: (handed, skipped) =>
        page.done(skipped ? { kind: 'again', reason: 'the subscription was paused or gone' } : { kind: 'settled', handed }),
    };
  };

  /** The session's hook for every decoded change: rows touched inside a page's window are dropped from it. */
  readonly onChange = (change: Change): void => {
    const pages = this.#collecting.get(tableKey(change.schema, change.table));
    if (!pages) return;
    for (const page of pages) {
      if (change.operation === 'TRUNCATE') {
        page.window.truncated();
        continue;
      }
      const positions = page.table.key.map((c) => change.record.indexOf.get(c));
      // A change without the key columns cannot be placed: the whole page is read again.
      if (positions.some((p) => p === undefined)) page.window.truncated();
      else page.window.changed(changeRows(change, positions as number[]) ?? []);
    }
  };

  #stopCollecting(key: string, page: OpenPage): void {
    const set = this.#collecting.get(key);
    if (!set) return;
    set.delete(page);
    if (set.size === 0) this.#collecting.delete(key);
  }

  async #run(): Promise<void> {
    const { log } = this.#ctx;
    while (!this.#abort.signal.aborted) {
      try {
        if (this.#o.isLeader() && this.#active.size < this.#o.concurrency) {
          for (const bf of await runningBackfills(this.#ctx.pool, 100)) {
            if (this.#active.size >= this.#o.concurrency) break;
            if (this.#active.has(bf.id)) continue;
            const driving = this.#drive(bf)
              .catch(async (err: Error) => {
                // A page the table cannot answer (a column's type changed since): it would fail forever.
                if (!isQueryProblem(err)) return log.warn({ err, backfill: bf.id }, 'backfill page failed; it is read again');
                log.warn({ err, backfill: bf.id }, 'backfill failed');
                await failBackfill(this.#ctx.pool, bf.id, err.message, this.#ctx.clock()).catch(() => undefined);
              })
              .finally(() => {
                this.#active.delete(bf.id);
                this.#ctx.metrics.backfillsActive.set(this.#active.size);
              });
            this.#active.set(bf.id, driving);
            this.#ctx.metrics.backfillsActive.set(this.#active.size);
          }
        }
      } catch (err) {
        log.warn({ err }, 'could not look for backfills');
      }
      await sleep(this.#o.pollMs, undefined, { signal: this.#abort.signal }).catch(() => undefined);
    }
  }

  /** Pages through one backfill until it is done, cancelled, or this process stops leading. */
  async #drive(bf: RunningBackfill): Promise<void> {
    const { pool, clock, metrics } = this.#ctx;
    let cursor = bf.cursor;
    while (!this.#abort.signal.aborted && this.#o.isLeader()) {
      const target = await backfillTarget(pool, bf.id);
      // Cancelled, or the subscription deleted (and its backfills with it).
      if (!target?.running) return;
      if (!target.active) {
        await sleep(this.#o.pollMs * 4, undefined, { signal: this.#abort.signal }).catch(() => undefined);
        continue;
      }
      const table = await describeBackfillTable(pool, target.schema, target.table, bf.sortColumn);
      const problem = !table
        ? `table ${target.schema}.${target.table} does not exist`
        : table.key.length === 0
          ? `table ${target.schema}.${target.table} has no primary key`
          : bf.sortColumn && !table.columns.includes(bf.sortColumn)
            ? `column ${bf.sortColumn} does not exist`
            : undefined;
      if (!problem && !bf.until) {
        // The table was empty when the backfill started: nothing to read.
        await recordPage(pool, bf.id, { cursor: null, rows: 0, done: true }, clock());
        return;
      }
      if (problem) {
        this.#ctx.log.warn({ backfill: bf.id, webhookId: bf.webhookId, problem }, 'backfill failed');
        await failBackfill(pool, bf.id, problem, clock());
        return;
      }
      const result = await this.#page(bf, table!, cursor, bf.until!);
      if (result.outcome.kind === 'again') {
        metrics.backfillPages.inc({ outcome: 'retried' });
        this.#ctx.log.info({ backfill: bf.id, reason: result.outcome.reason }, 'backfill page read again');
        await sleep(this.#o.pollMs, undefined, { signal: this.#abort.signal }).catch(() => undefined);
        continue;
      }
      metrics.backfillPages.inc({ outcome: 'handed' });
      metrics.backfillRows.inc(result.outcome.handed);
      const done = !result.more;
      const recorded = await recordPage(pool, bf.id, { cursor: result.cursor, rows: result.outcome.handed, done }, clock());
      if (recorded && done) this.#ctx.log.info({ backfill: bf.id, webhookId: bf.webhookId }, 'backfill done');
      if (!recorded || done) return; // cancelled meanwhile, or finished
      cursor = result.cursor;
    }
  }

  /** One page: low watermark, read, high watermark; then wait until the session handed its rows on and they settled. */
  async #page(bf: RunningBackfill, table: BackfillTable, cursor: string[] | null, until: string[]) {
    const token = randomId('page_');
    let done!: (r: PageResult) => void;
    const settled = new Promise<PageResult>((resolve) => (done = resolve));
    const page: OpenPage = { table, webhookId: bf.webhookId, window: new WatermarkWindow(), done };
    this.#pages.set(token, page);
    const timer = setTimeout(() => done({ kind: 'again', reason: 'the high watermark did not come back in time' }), this.#o.pageTimeoutMs);
    try {
      const { pool } = this.#ctx;
      await emitWatermark(pool, { page: token, mark: 'low' });
      const read = await readPage(pool, {
        table,
        cursor,
        until,
        since: bf.since,
        filter: bf.filter,
        maxRows: this.#o.pageRows,
        maxBytes: this.#o.pageBytes,
      });
      page.window.read(read.rows);
      await emitWatermark(pool, { page: token, mark: 'high' });
      return { outcome: await settled, cursor: read.cursor, more: read.more };
    } finally {
      clearTimeout(timer);
      this.#pages.delete(token);
      this.#stopCollecting(tableKey(table.schema, table.table), page);
    }
  }
}
