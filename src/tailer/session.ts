import type { Clock } from '../core/clock.js';
import type { Pool } from '../core/db/pool.js';
import type { Logger } from '../core/log.js';
import { decodeChange, decodeRow, describeRelation, type Relation } from './decode.js';
import { eventId, matchDeliveries, toEventRecord, type DeliveryRecord, type EventRecord, type Operation } from './events.js';
import type { Lsn } from './lsn.js';
import { writeBatch } from './outbox.js';
import type { PgoutputMessage, RawTuple } from './pgoutput.js';
import { SubscriptionView, type SubscriptionSpec, type ViewChange } from './subscriptions.js';
import type { TypeRegistry } from './types.js';

export interface SessionOptions {
  pool: Pool;
  slotName: string;
  log: Logger;
  clock: Clock;
  types: TypeRegistry;
  /** Where the slot stands: transactions that committed before it were already processed. */
  processedLsn: Lsn;
  subscriptions: SubscriptionSpec[];
  /** Deliveries held in memory before reading pauses (backpressure). */
  maxBuffered: number;
  /** Counts events as they are produced (by operation). */
  onEvent?: (operation: Operation) => void;
  /** Reports a position that may be acknowledged to Postgres. */
  onDurable: (lsn: Lsn) => void;
  /** Called once when processing failed and the stream must restart from the durable position. */
  onFailure: (err: Error) => void;
}

interface OpenTransaction {
  commitLsn: Lsn;
  committedAt: Date;
  /** Already processed before a restart: read through, write nothing. */
  skip: boolean;
  index: number;
  viewChanges: ViewChange[];
}

const WEBHOOKS_SCHEMA = 'walgate';
const WEBHOOKS_TABLE = 'webhooks';

/**
 * One replication session's processing: turns the ordered pgoutput messages into deliveries,
 * writes them in batches (one at a time, in WAL order), and reports each position whose
 * transactions are durably written. Nothing is acknowledged past what is in Postgres.
 *
 * Batching is group commit: a commit starts a write when none is running; while one runs, the
 * following transactions gather and go together in the next. Reading pauses when maxBuffered
 * deliveries wait, which bounds memory however large the backlog.
 */
export class ReplicationSession {
  readonly #o: SessionOptions;
  readonly #view: SubscriptionView;
  readonly #relations = new Map<number, Relation>();
  #processedLsn: Lsn;
  #tx: OpenTransaction | null = null;
  // Waiting to be written: deliveries, view changes of whole transactions, and the end LSN of the
  // last whole transaction among them.
  #events: EventRecord[] = [];
  #deliveries: DeliveryRecord[] = [];
  #viewChanges: ViewChange[] = [];
  #endLsn: Lsn | null = null;
  #writing: Promise<void> | null = null;
  #failed = false;
  #received = 0;
  #handled = 0;
  #warnedTruncate = new Set<string>();
  stats = { transactions: 0, changes: 0, deliveries: 0, batches: 0 };

  constructor(options: SessionOptions) {
    this.#o = options;
    this.#processedLsn = options.processedLsn;
    this.#view = new SubscriptionView(options.subscriptions);
  }

  get failed(): boolean {
    return this.#failed;
  }

  /** Counted by the plugin as each message arrives, before it waits in the library's queue. */
  received(): void {
    this.#received++;
  }

  /** True when every message received so far is handled and written: a keepalive's position is then safe. */
  get idle(): boolean {
    return (
      this.#received === this.#handled &&
      this.#tx === null &&
      this.#writing === null &&
      this.#deliveries.length === 0 &&
      this.#endLsn === null
    );
  }

  async handle(msg: PgoutputMessage): Promise<void> {
    if (this.#failed) return;
    try {
      await this.#handle(msg);
    } catch (err) {
      this.fail(err as Error);
    } finally {
      this.#handled++;
    }
  }

  fail(err: Error): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#o.onFailure(err);
  }

  /** Waits for the write in progress (at shutdown: what is being written is finished, not dropped). */
  async settle(): Promise<void> {
    while (this.#writing) await this.#writing.catch(() => undefined);
  }

  async #handle(msg: PgoutputMessage): Promise<void> {
    switch (msg.tag) {
      case 'relation':
        this.#relations.set(msg.relationOid, await describeRelation(msg, this.#o.types));
        return;
      case 'begin':
        this.#tx = {
          commitLsn: msg.commitLsn,
          committedAt: msg.commitTime,
          // The commit records of processed transactions all lie before the processed position.
          skip: msg.commitLsn < this.#processedLsn,
          index: 0,
          viewChanges: [],
        };
        return;
      case 'insert':
        return this.#change('INSERT', msg.relationOid, msg.new, null, false);
      case 'update':
        return this.#change('UPDATE', msg.relationOid, msg.new, msg.old, msg.oldIsKeyOnly);
      case 'delete':
        return this.#change('DELETE', msg.relationOid, null, msg.old, msg.oldIsKeyOnly);
      case 'truncate':
        for (const oid of msg.relationOids) {
          const rel = this.#relations.get(oid);
          const name = rel ? `${rel.schema}.${rel.name}` : String(oid);
          if (!this.#warnedTruncate.has(name)) {
            this.#warnedTruncate.add(name);
            this.#o.log.warn({ table: name }, 'TRUNCATE is not a row change: no events are sent for it');
          }
        }
        return;
      case 'commit': {
        const tx = this.#tx;
        this.#tx = null;
        if (!tx || tx.skip) return;
        this.stats.transactions++;
        this.#viewChanges.push(...tx.viewChanges);
        this.#endLsn = msg.endLsn;
        this.#startWrite();
        return;
      }
      default:
        return;
    }
  }

  async #change(op: Operation, relationOid: number, newTuple: RawTuple | null, oldTuple: RawTuple | null, keyOnly: boolean) {
    const tx = this.#tx;
    if (!tx) throw new Error('pgoutput: change outside a transaction');
    const index = tx.index++;
    if (tx.skip) return;
    const rel = this.#relations.get(relationOid);
    if (!rel) throw new Error(`pgoutput: change on unknown relation ${relationOid}`);
    if (rel.schema === WEBHOOKS_SCHEMA && rel.name === WEBHOOKS_TABLE) {
      this.#subscriptionChange(tx, rel, op, newTuple ?? oldTuple!);
      return;
    }
    const subs = this.#view.forTable(rel.schema, rel.name);
    if (subs.length === 0) return;
    this.stats.changes++;
    const { change, missing } = decodeChange({
      operation: op,
      eventId: eventId(tx.commitLsn, index),
      committedAt: tx.committedAt,
      rel,
      newTuple,
      oldTuple,
      oldIsKeyOnly: keyOnly,
    });
    if (missing.length > 0) {
      this.#o.log.warn(
        { table: `${rel.schema}.${rel.name}`, columns: missing, event: change.eventId },
        'unchanged TOASTed values without an old row (is REPLICA IDENTITY FULL set?): sent as null',
      );
    }
    const rows = matchDeliveries(subs, change);
    if (rows.length === 0) return;
    this.#events.push(toEventRecord(change));
    this.#o.onEvent?.(op);
    for (const r of rows) this.#deliveries.push(r);
    this.stats.deliveries += rows.length;
    if (this.#deliveries.length >= this.#o.maxBuffered) {
      // Backpressure: reading waits (the library pauses the socket while we await) for the write
      // in progress, then hands the full buffer to the next write and reads on while it runs — so
      // at most two buffers are in memory and reading overlaps writing. Part of an open
      // transaction may go in a write; its position is only recorded with its commit, so a crash
      // re-reads all of it (and rewrites it idempotently).
      await this.settle();
      this.#startWrite();
    }
  }

  #subscriptionChange(tx: OpenTransaction, rel: Relation, op: Operation, tuple: RawTuple): void {
    const { row } = decodeRow(rel, tuple);
    const get = (name: string): string | null => {
      const i = row.indexOf.get(name);
      return i === undefined ? null : (JSON.parse(row.fragments[i]!) as string | null);
    };
    const id = get('id')!;
    if (op === 'DELETE') {
      this.#view.remove(id);
      tx.viewChanges.push({ op: 'delete', id });
      return;
    }
    const raw = (name: string) => {
      const i = row.indexOf.get(name);
      return i === undefined ? 'null' : row.fragments[i]!;
    };
    // text[] columns render as JSON arrays (types.ts), so they parse straight back.
    const textArray = (name: string) => JSON.parse(raw(name)) as string[] | null;
    const spec: SubscriptionSpec = {
      id,
      projectId: get('project_id')!,
      environment: get('environment')!,
      schema: get('schema_name')!,
      table: get('table_name')!,
      events: textArray('events') ?? [],
      active: JSON.parse(raw('active')) === true,
      filter: JSON.parse(raw('filter')) as Record<string, unknown> | null,
      select: textArray('select_fields'),
    };
    this.#view.upsert(spec);
    tx.viewChanges.push({ op: 'upsert', spec });
  }

  /** Starts writing what waits, unless a write runs (its completion starts the next). */
  #startWrite(): void {
    if (this.#writing || this.#failed) return;
    if (this.#deliveries.length === 0 && this.#viewChanges.length === 0 && this.#endLsn === null) return;
    const batch = { events: this.#events, deliveries: this.#deliveries, viewChanges: this.#viewChanges, processedLsn: this.#endLsn };
    this.#events = [];
    this.#deliveries = [];
    this.#viewChanges = [];
    this.#endLsn = null;
    this.#writing = (async () => {
      // Whole transactions that produced nothing to write need no round trip: on a restart they
      // would be read again and produce nothing again.
      if (batch.deliveries.length > 0 || batch.viewChanges.length > 0) {
        await writeBatch(this.#o.pool, this.#o.slotName, batch, this.#o.clock());
        this.stats.batches++;
      }
      if (batch.processedLsn !== null) {
        this.#processedLsn = batch.processedLsn;
        this.#o.onDurable(batch.processedLsn);
      }
    })().then(
      () => {
        this.#writing = null;
        this.#startWrite();
      },
      (err: unknown) => {
        this.#writing = null;
        this.fail(err as Error);
      },
    );
  }
}
