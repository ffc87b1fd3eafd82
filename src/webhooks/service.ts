import type { Context } from '../core/context.js';
import type { HostLookup } from '../core/net/address-policy.js';
import { randomId } from '../core/crypto/tokens.js';
import { ReplayJobs, type ReplayView } from '../delivery/replays.js';
import { PgCode, pgCode, withTransaction, type Queryable } from '../core/db/pool.js';
import { breakerState, type BreakerView } from '../delivery/breaker.js';
import {
  countDeadDeliveries,
  deliveryHealth,
  shedFinishedHistory,
  recentDeliveries,
  type DeliveryDetail,
  type DeliveryView,
  type MinuteBucket,
} from '../delivery/sql/history.js';
import { AppError, validationError } from '../core/errors.js';
import type { Environment } from '../projects/environments.js';
import {
  CaptureError,
  capturedRelation,
  captureTable,
  lockCapturedTables,
  messageColumns,
  releaseTable,
  retainChanges,
} from '../tailer/capture/index.js';
import type { CreateBody, UpdateBody } from './schemas.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { DeliveryLog, type DeliveryPage, type DeliveryPageQuery } from './delivery-log.js';
import { sealWebhookSecret } from '../delivery/secret.js';
import { deliverySettings } from './delivery-settings.js';
import { sealHeaders } from '../delivery/custom-headers.js';
import { breakerStates, endpointHealth, eventDeliveries, type EventDelivery, type HealthWindow } from '../delivery/sql/health.js';
import { queueTestEvent } from '../delivery/sql/test-events.js';
import { messageSample, sampleRecord } from '../delivery/sql/sample-row.js';
import { listEnvironments } from '../projects/environments.js';
import * as store from './store.js';
import { bodyViolations, schemaTables, urlViolations, type BodyFacts, type TableInfo } from './validation.js';
import { webhookView, type WebhookHealth, type WebhookView } from './view.js';
import { webhookProblems } from './problems.js';
import { patchedOrdering, storedOrdering } from './ordering.js';
import { resolveTarget, storedDestination, urlTarget, type KeyFacts, type SubscriptionTarget } from './destinations/target.js';
import { namesKey } from '../delivery/destinations/address.js';
import type { DestinationRef } from './destinations/schemas.js';

// The rules of webhook subscriptions. Writes go through one transaction with the publication
// change, so a subscription exists exactly when the tailer can see its table.

/** Finished deliveries a deleted subscription sheds per statement. */
const SHED_BATCH = 5000;

function sealedHeaders(h: { names: string[]; values: Buffer | null }): Pick<store.WebhookRow, 'headerNames' | 'headerValues'> {
  return { headerNames: h.names, headerValues: h.values };
}

export class WebhookService {
  /** Replays as jobs: the api daemon starts and stops it (it takes up jobs whose process stopped). */
  readonly replays: ReplayJobs;
  /** A subscription's delivery log (delivery-log.ts), once the subscription is found. */
  readonly #log: DeliveryLog;

  constructor(private readonly ctx: Context) {
    this.replays = new ReplayJobs(ctx);
    this.#log = new DeliveryLog(ctx);
  }

  async create(env: Environment, body: CreateBody): Promise<WebhookView> {
    const keyFacts = {
      ordering: body.ordering,
      events: body.events,
      select: body.select ?? null,
      batchMaxEvents: body.batch?.maxEvents ?? 1,
    };
    const target = await this.#validate(env, { ...body, rowOrdered: body.ordering === 'row' }, body, keyFacts);
    await this.#ensureSlot();
    const now = this.ctx.clock();
    const row = await this.#write(async (c) => {
      const created = await store.insertWebhook(c, {
        id: randomId('wh_'),
        projectId: env.projectId,
        environment: env.name,
        schemaName: env.schemaName,
        table: body.table,
        events: body.events,
        ...target,
        secret: sealWebhookSecret(this.ctx.secrets, body.secret),
        active: body.active,
        filter: body.filter ?? null,
        select: body.select ?? null,
        ...storedOrdering(body.ordering),
        history: body.history,
        onDead: body.onDead,
        ...deliverySettings(body),
        createdAt: now,
        updatedAt: now,
        previousSecret: null,
        previousSecretUntil: null,
        disabledReason: null,
        disabledAt: null,
        ...sealedHeaders(sealHeaders(this.ctx.secrets, body.headers)),
      });
      await captureTable(c, env.schemaName, body.table);
      return created;
    });
    return this.#view(row);
  }

  /** A page of subscriptions, each with its breaker: what a list needs, in one request. */
  async list(
    env: Environment,
    limit: number,
    cursor: string | undefined,
  ): Promise<{ webhooks: Array<WebhookView & { breaker: BreakerView }>; nextCursor: string | null }> {
    const after = cursor ? decodeCursor(cursor) : undefined;
    const rows = await store.listWebhooks(this.ctx.pool, env.projectId, env.name, limit + 1, after);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const breakers = await breakerStates(this.ctx.pool, page, this.ctx.clock());
    const problems = await webhookProblems(this.ctx.pool, page, this.ctx.clock());
    return {
      webhooks: page.map((w, i) => ({ ...webhookView(w, problems.get(w.id), breakers[i]), breaker: breakers[i]! })),
      nextCursor: rows.length > limit && last ? encodeCursor(last) : null,
    };
  }

  /** The environments of the token's project, for switching between them. */
  async environments(env: Environment): Promise<{ environments: Array<{ name: string }> }> {
    return { environments: (await listEnvironments(this.ctx.pool, env.projectId)).map((e) => ({ name: e.name })) };
  }

  /** An event's deliveries across the environment's subscriptions. */
  async eventSearch(env: Environment, eventId: string): Promise<{ deliveries: EventDelivery[] }> {
    const ids = await store.webhookIds(this.ctx.pool, env.projectId, env.name);
    return { deliveries: await eventDeliveries(this.ctx.pool, eventId, ids) };
  }

  /** Success rate and latency over the last 24 hours and 7 days. */
  async health(env: Environment, id: string): Promise<{ windows: HealthWindow[] }> {
    const row = await this.#find(env, id);
    return { windows: await endpointHealth(this.ctx.pool, row.id, this.ctx.clock()) };
  }

  /** Queues a signed sample event of the subscription's table, marked as a test. */
  async test(env: Environment, id: string): Promise<{ delivery: DeliveryView }> {
    const row = await this.#find(env, id);
    const virtual = messageColumns(row.table);
    const { schema, table } = capturedRelation(env.schemaName, row.table);
    const record = virtual ? messageSample(virtual) : await sampleRecord(this.ctx.pool, schema, table);
    if (!record) throw new AppError('SERVICE_UNAVAILABLE', `The table ${row.table} no longer exists in schema ${env.schemaName}.`);
    const delivery = await queueTestEvent(
      this.ctx.pool,
      { webhookId: row.id, schemaName: env.schemaName, table: row.table, select: row.select },
      record,
      this.ctx.clock(),
    );
    return { delivery };
  }

  async get(env: Environment, id: string): Promise<{ webhook: WebhookView; health: WebhookHealth; deliveries: DeliveryView[] }> {
    const row = await this.#find(env, id);
    const now = this.ctx.clock();
    const [problems, breaker, history, deliveries] = await Promise.all([
      webhookProblems(this.ctx.pool, [row], now),
      breakerState(this.ctx.pool, { projectId: row.projectId, environment: row.environment, url: row.url }, now),
      deliveryHealth(this.ctx.pool, row.id, now),
      recentDeliveries(this.ctx.pool, row.id, 50),
    ]);
    return {
      webhook: webhookView(row, problems.get(row.id), breaker),
      health: { breaker, disabledReason: row.disabledReason, disabledAt: row.disabledAt?.toISOString() ?? null, ...history },
      deliveries,
    };
  }

  /** The environment's tables and columns, for picking `table`, `filter` and `select`. */
  async tables(env: Environment): Promise<{ tables: TableInfo[] }> {
    return { tables: await schemaTables(this.ctx.pool, env.schemaName) };
  }

  async deliveries(env: Environment, id: string, q: DeliveryPageQuery): Promise<DeliveryPage> {
    return this.#log.page(await this.#find(env, id), q);
  }

  async delivery(env: Environment, id: string, deliveryId: string): Promise<{ delivery: DeliveryDetail }> {
    return this.#log.delivery(await this.#find(env, id), deliveryId);
  }

  async retry(env: Environment, id: string, deliveryId: string): Promise<{ delivery: DeliveryView }> {
    return this.#log.retry(await this.#find(env, id), deliveryId);
  }

  /** A held dead letter (onDead "hold") lets its row go on; it stays dead and listed. */
  async discard(env: Environment, id: string, deliveryId: string): Promise<{ delivery: DeliveryView }> {
    return this.#log.discard(await this.#find(env, id), deliveryId);
  }

  async minutes(env: Environment, id: string): Promise<{ minutes: MinuteBucket[] }> {
    return this.#log.minutes(await this.#find(env, id));
  }

  async update(env: Environment, id: string, body: UpdateBody): Promise<WebhookView> {
    // The URL check resolves the host: done before the transaction, as it depends on the body alone.
    const urlProblems =
      body.url === undefined ? [] : await urlViolations(body.url, this.ctx.config.webhooks.allowPrivateNetworks, this.ctx.lookup);
    const now = this.ctx.clock();
    const row = await this.#write(async (c) => {
      // The publication, then the row: what the body does not name is taken from the row as it is
      // now, under its lock — not as it was read before a concurrent PATCH committed, which would
      // write that PATCH's changes back (a PATCH of `active` undoing one of `table`).
      await lockCapturedTables(c);
      const locked = id.length <= 128 ? await store.findWebhook(c, env.projectId, env.name, id, true) : undefined;
      if (!locked) throw new AppError('WEBHOOK_NOT_FOUND');
      const table = body.table ?? locked.table;
      // filter/select: absent keeps, null clears; re-checked against the table either way.
      const filter = body.filter === undefined ? locked.filter : body.filter;
      const select = body.select === undefined ? locked.select : body.select;
      const { ordering, onDead, rowOrdered, violations: orderProblems } = patchedOrdering(body, locked);
      // A destination's templates name the table: moved to another, they are resolved again; one
      // naming {key} also when the body changes what the key depends on (ordering, events, select,
      // batch) — not on a pause or a new secret, which must go through whatever the table is now.
      const stored = body.url === undefined ? storedDestination(locked) : undefined;
      const keyed = stored && namesKey(stored.subject ?? stored.routingKey ?? '');
      const keyFactsChange = [body.ordering, body.events, body.select, body.batch].some((v) => v !== undefined);
      const again = stored && (table !== locked.table || (keyed && keyFactsChange));
      const destination = body.destination ?? (again ? stored : undefined);
      const keyFacts = {
        ordering,
        events: body.events ?? locked.events,
        select,
        batchMaxEvents: body.batch === undefined ? locked.batch.maxEvents : (body.batch?.maxEvents ?? 1),
      };
      const resolved = destination ? await resolveTarget(c, env, table, { destination }, this.#net, keyFacts) : undefined;
      const violations = [
        ...(await bodyViolations(c, env, { ...body, table, filter, select, rowOrdered, ordering })),
        ...urlProblems,
        ...orderProblems,
        ...(resolved?.violations ?? []),
      ];
      if (violations.length) throw validationError(violations);
      const updated = await store.updateWebhook(c, {
        ...locked,
        table,
        events: body.events ?? locked.events,
        ...(resolved?.target ?? (body.url === undefined ? {} : urlTarget(body.url))),
        ...(body.secret === undefined
          ? {}
          : {
              // A rotation: the secret it replaces still signs for the grace period (a second
              // rotation within it drops the oldest), so receivers switch without a gap.
              secret: sealWebhookSecret(this.ctx.secrets, body.secret),
              previousSecret: locked.secret,
              previousSecretUntil: new Date(now.getTime() + this.ctx.config.webhooks.secretGraceMs),
            }),
        active: body.active ?? locked.active,
        filter,
        select,
        ...storedOrdering(ordering),
        history: body.history ?? locked.history,
        onDead,
        ...deliverySettings(body, locked),
        updatedAt: now,
        // Replaced as a whole (the values are never shown, so there is nothing to merge with).
        ...(body.headers === undefined ? {} : sealedHeaders(sealHeaders(this.ctx.secrets, body.headers))),
      });
      if (table !== locked.table) {
        await captureTable(c, env.schemaName, table);
        if (!(await store.tableIsWatched(c, locked.schemaName, locked.table))) await releaseTable(c, locked.schemaName, locked.table);
      } else {
        // Any update repairs what DDL undid (publication, replica identity) where walgate could not
        // follow it live; a table gone or unwatchable stays a reported problem, never blocks the update.
        await captureTable(c, env.schemaName, table).catch((err: unknown) => {
          if (!(err instanceof CaptureError && (err.reason === 'not_a_table' || err.reason === 'unsafe'))) throw err;
        });
      }
      return updated;
    });
    return this.#view(row);
  }

  async delete(env: Environment, id: string): Promise<void> {
    // A long history would cascade in the delete's transaction for seconds, holding the locks a
    // concurrent PATCH waits for: the finished part goes first, in short batches of its own (the
    // caller asked for all of it to go; should the delete then fail, its log is shorter).
    const row = await this.#find(env, id);
    for (let shed = SHED_BATCH; shed === SHED_BATCH;) shed = await shedFinishedHistory(this.ctx.pool, row.id, SHED_BATCH);
    await this.#write(async (c) => {
      // The same lock order as an update (the publication, then the row): the other way round a
      // DELETE and a PATCH of one subscription each held what the other waited for (a deadlock, 500).
      await lockCapturedTables(c);
      const row = id.length <= 128 ? await store.findWebhook(c, env.projectId, env.name, id, true) : undefined;
      if (!row) throw new AppError('WEBHOOK_NOT_FOUND');
      await store.deleteWebhook(c, id); // its deliveries go with it (ON DELETE CASCADE), its breaker too
      if (!(await store.tableIsWatched(c, row.schemaName, row.table))) await releaseTable(c, row.schemaName, row.table);
    });
  }

  /**
   * Dead letters made pending again: `replayed` is how many so far (all of them when the replay
   * was small enough to run at once; see `replay.state`). With dryRun only counted.
   */
  async replay(
    env: Environment,
    id: string,
    range: { since?: Date; until?: Date },
    dryRun = false,
  ): Promise<{ replayed: number; replay?: ReplayView }> {
    const row = await this.#find(env, id);
    if (dryRun) return { replayed: await countDeadDeliveries(this.ctx.pool, { webhookId: row.id, ...range }) };
    const replay = await this.replays.submit(row.id, range);
    if (!replay) throw new AppError('WEBHOOK_NOT_FOUND'); // deleted meanwhile
    return { replayed: replay.replayed, replay };
  }

  async getReplay(env: Environment, id: string, replayId: string): Promise<{ replay: ReplayView }> {
    const row = await this.#find(env, id);
    const replay = await this.replays.get(row.id, replayId);
    if (!replay) throw new AppError('REPLAY_NOT_FOUND');
    return { replay };
  }

  /** Its view after a write: its state comes from its endpoint's breaker (another subscription to that URL may be failing). */
  async #view(row: store.WebhookRow): Promise<WebhookView> {
    const breaker = await breakerState(
      this.ctx.pool,
      { projectId: row.projectId, environment: row.environment, url: row.url },
      this.ctx.clock(),
    );
    return webhookView(row, [], breaker);
  }

  async #find(env: Environment, id: string): Promise<store.WebhookRow> {
    const row = id.length <= 128 ? await store.findWebhook(this.ctx.pool, env.projectId, env.name, id) : undefined;
    if (!row) throw new AppError('WEBHOOK_NOT_FOUND');
    return row;
  }

  /** Everything about a body that needs the database or the network, as violations; else where it delivers. */
  async #validate(
    env: Environment,
    body: BodyFacts,
    given: { url?: string; destination?: DestinationRef },
    keyFacts: KeyFacts,
  ): Promise<SubscriptionTarget> {
    const violations = await bodyViolations(this.ctx.pool, env, body);
    const to = given.destination ? { destination: given.destination } : { url: given.url! };
    const { target, violations: targetProblems } = await resolveTarget(this.ctx.pool, env, body.table, to, this.#net, keyFacts);
    violations.push(...targetProblems);
    if (violations.length || !target) throw validationError(violations);
    return target;
  }

  get #net(): { allowPrivateNetworks: boolean; lookup?: HostLookup } {
    return { allowPrivateNetworks: this.ctx.config.webhooks.allowPrivateNetworks, lookup: this.ctx.lookup };
  }

  /** The slot exists before the first subscription does, so no change after it is ever missed. */
  async #ensureSlot(): Promise<void> {
    try {
      await retainChanges(this.ctx.pool);
    } catch (err) {
      // wal_level is not logical.
      if (pgCode(err) === PgCode.objectNotInPrerequisiteState) {
        throw new AppError('SERVICE_UNAVAILABLE', 'Postgres is not set up for logical replication (wal_level=logical is required).');
      }
      throw err;
    }
  }

  async #write<T>(fn: (c: Queryable) => Promise<T>): Promise<T> {
    try {
      // A deadlock Postgres broke is retried (all or nothing was written): once the lock order is
      // the same everywhere it is rare, but a caller never sees it as a 500.
      for (let attempt = 1; ; attempt++) {
        try {
          return await withTransaction(this.ctx.pool, fn);
        } catch (err) {
          if (pgCode(err) !== PgCode.deadlockDetected || attempt >= 3) throw err;
        }
      }
    } catch (err) {
      if (err instanceof CaptureError && (err.reason === 'not_a_table' || err.reason === 'unsafe')) {
        throw validationError([{ path: 'table', message: err.message }]);
      }
      if (err instanceof CaptureError && err.reason === 'busy') {
        throw new AppError('SERVICE_UNAVAILABLE', `The table cannot be watched now: ${err.message}.`, {}, { 'Retry-After': '5' });
      }
      if (err instanceof CaptureError) {
        // Nothing was saved; the operator must give walgate's role ownership of the table.
        throw new AppError('SERVICE_UNAVAILABLE', `The table cannot be watched: ${err.message}.`);
      }
      throw err;
    }
  }
}
