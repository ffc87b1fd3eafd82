import type { Context } from '../core/context.js';
import { PgCode, pgCode } from '../core/db/pool.js';
import { AppError, validationError, type Violation } from '../core/errors.js';
import type { Environment } from '../projects/environments.js';
import {
  isFeed,
  backfillView,
  cancelBackfill,
  describeBackfillTable,
  estimateRows,
  getBackfill,
  insertBackfill,
  lastSortKey,
  listBackfills,
  listGaps,
  MESSAGES_TABLE,
  probeKeyset,
  runningBackfillOf,
  type Backfill,
} from '../tailer/capture/index.js';
import * as store from './store.js';

// Backfills as a subscription's owner sees them (docs/backfills.md): asked for here, run by the
// tailer that reads the slot (tailer/backfill/runner.ts), followed and cancelled here.

export interface BackfillRequest {
  filter?: Record<string, unknown> | null | undefined;
  sortColumn?: string | undefined;
  since?: string | undefined;
}

export class BackfillService {
  constructor(private readonly ctx: Context) {}

  async create(env: Environment, webhookId: string, body: BackfillRequest, gapId: string | null = null): Promise<{ backfill: Backfill }> {
    const webhook = await this.#find(env, webhookId);
    const violations: Violation[] = [];
    if (webhook.table === MESSAGES_TABLE || isFeed(webhook.table)) {
      throw validationError([{ path: 'table', message: `${webhook.table} is not a table: it has no rows to backfill` }]);
    }
    const table = await describeBackfillTable(this.ctx.pool, env.schemaName, webhook.table, body.sortColumn ?? null);
    if (!table) throw validationError([{ path: 'table', message: `table ${webhook.table} does not exist in schema ${env.schemaName}` }]);
    if (table.key.length === 0)
      violations.push({ path: 'table', message: `table ${webhook.table} has no primary key: its rows cannot be paged` });
    if (body.sortColumn !== undefined && !table.columns.includes(body.sortColumn)) {
      violations.push({ path: 'sortColumn', message: `column ${body.sortColumn} does not exist in ${webhook.table}` });
    }
    for (const column of Object.keys(body.filter ?? {})) {
      if (!table.columns.includes(column))
        violations.push({ path: `filter.${column}`, message: `column ${column} does not exist in ${webhook.table}` });
    }
    if (violations.length === 0 && table.key.length > 0) {
      const problem = await probeKeyset(this.ctx.pool, table, body.since ?? null);
      if (problem) violations.push(problem);
    }
    if (violations.length > 0) throw validationError(violations);
    const totalEstimate = await estimateRows(this.ctx.pool, table);
    const until = (await lastSortKey(this.ctx.pool, table)) ?? null;
    try {
      const backfill = await insertBackfill(
        this.ctx.pool,
        {
          webhookId,
          gapId,
          filter: body.filter ?? null,
          sortColumn: body.sortColumn ?? null,
          since: body.since ?? null,
          until,
          totalEstimate,
        },
        this.ctx.clock(),
      );
      return { backfill: backfillView(backfill) };
    } catch (err) {
      if (pgCode(err) === PgCode.uniqueViolation) throw new AppError('BACKFILL_RUNNING');
      throw err;
    }
  }

  async list(env: Environment, webhookId: string): Promise<{ backfills: Backfill[] }> {
    await this.#find(env, webhookId);
    return { backfills: (await listBackfills(this.ctx.pool, webhookId)).map(backfillView) };
  }

  async get(env: Environment, webhookId: string, id: string): Promise<{ backfill: Backfill }> {
    await this.#find(env, webhookId);
    const found = await getBackfill(this.ctx.pool, webhookId, id);
    if (!found) throw new AppError('BACKFILL_NOT_FOUND');
    return { backfill: backfillView(found) };
  }

  async cancel(env: Environment, webhookId: string, id: string): Promise<{ backfill: Backfill }> {
    await this.#find(env, webhookId);
    const found = await cancelBackfill(this.ctx.pool, webhookId, id, this.ctx.clock());
    if (!found) throw new AppError('BACKFILL_NOT_FOUND');
    return { backfill: backfillView(found) };
  }

  /**
   * Repairs a capture gap: a backfill of every subscription it affected that still exists. A
   * subscription already being backfilled keeps the backfill it has (listed too).
   */
  async fromGap(env: Environment, gapId: string): Promise<{ backfills: Backfill[] }> {
    const gap = (await listGaps(this.ctx.pool, env.projectId, env.name, false)).find((g) => g.id === gapId);
    if (!gap) throw new AppError('GAP_NOT_FOUND');
    const backfills: Backfill[] = [];
    for (const webhookId of gap.webhookIds) {
      const webhook = await store.findWebhook(this.ctx.pool, env.projectId, env.name, webhookId);
      if (!webhook || webhook.table === MESSAGES_TABLE || isFeed(webhook.table)) continue;
      try {
        backfills.push((await this.create(env, webhookId, {}, gapId)).backfill);
      } catch (err) {
        const running =
          err instanceof AppError && err.code === 'BACKFILL_RUNNING' ? await runningBackfillOf(this.ctx.pool, webhookId) : undefined;
        if (running) backfills.push(backfillView(running));
        else if (!(err instanceof AppError && err.code === 'VALIDATION_ERROR')) throw err;
      }
    }
    return { backfills };
  }

  async #find(env: Environment, webhookId: string) {
    const row = await store.findWebhook(this.ctx.pool, env.projectId, env.name, webhookId);
    if (!row) throw new AppError('WEBHOOK_NOT_FOUND');
    return row;
  }
}
