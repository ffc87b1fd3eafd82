import type { Clock } from '../core/clock.js';
import type { Queryable } from '../core/db/pool.js';
import type { Logger } from '../core/log.js';
import type { DeliveryStream } from './sink.js';
import { decodeChange, decodeRow, describeRelation, type Relation } from './decode.js';
import type { PreviousEvents } from './previous-events.js';
import { eventId, matchDeliveries, toEventRecord, truncateChange, type Change, type DeliveryRecord, type Operation } from './events.js';
import { handInjected, type InjectedRows } from './injection.js';
import { changeRows } from './order-keys.js';
import { KeyColumns } from './key-columns.js';
import { formatLsn, type Lsn } from './lsn.js';
import type { PgoutputMessage, RawTuple } from './pgoutput.js';
import { isReservedPrefix, messageChange, messageSchema, MESSAGES_TABLE, type ReservedMessage } from './messages.js';
import {
  pruneViewVersions,
  saveViewChanges,
  specFromWalRow,
  SubscriptionView,
  type SubscriptionSpec,
  type ViewChange,
} from './subscriptions.js';
import type { TypeRegistry } from './types.js';
import { advancePosition } from './position.js';
import { asFeedChange, feedOf, feedSubscriptions } from './feeds.js';
import type { RecordedDeliveries } from './resume.js';

export interface SessionOptions {
  /** The connection that holds the leadership: the session's own writes go through it (fencing). */
  fenced: Queryable;
  /** Where matched deliveries go (delivery/stream.ts). */
  stream: DeliveryStream;
  slotName: string;
  log: Logger;
  clock: Clock;
  types: TypeRegistry;
  previousEvents: PreviousEvents;
  /** Where the slot stands: transactions that committed before it were already processed. */
  processedLsn: Lsn;
  subscriptions: SubscriptionSpec[];
  /** A relation's primary-key columns (order-keys.ts primaryKeyOf), for row-ordered subscriptions. */
  primaryKey: (relationOid: number) => Promise<string[]>;
  /** Skips deliveries already recorded by an earlier session (resume.ts). */
  recorded?: RecordedDeliveries;
  /** Counts events as they are produced (by operation). */
  onEvent?: (operation: Operation) => void;
  /** Counts truncates of watched tables (whether or not a subscription opted into them). */
  onTruncate?: (schema: string, table: string) => void;
  /** Takes walgate's own logical messages (`walgate.` prefixes, messages.ts); awaited; what it returns (a backfill page) is handed on at the message's place. */
  onReservedMessage?: (m: ReservedMessage) => void | InjectedRows | Promise<void | InjectedRows>;
  /** Sees every decoded change of a watched table, before it is matched (backfill windows, tailer/backfill/). */
  onChange?: (change: Change) => void;
  /** Reports a position that may be acknowledged to Postgres. */
  onDurable: (lsn: Lsn) => void;
  /** Called once when processing failed and the stream must restart from the durable position. */
  onFailure: (err: Error) => void;
}

/** A transaction read and not yet settled. */
interface OpenTransaction {
  commitLsn: Lsn;
  committedAt: Date;
  /** Known at its commit; until then the transaction is still being read. */
  endLsn: Lsn | null;
  /** Already processed before a restart: read through, hand nothing on. */
  skip: boolean;
  index: number;
  viewChanges: ViewChange[];
  /** Changes handed to the delivery stream and not settled yet, plus its view save while it runs. */
  unsettled: number;
  /** Whether the composite types were checked for changes in this transaction (relations.ts). */
  typesChecked: boolean;
}

/** The relation id the resume look-up files messages under (no table has oid 0). */
const MESSAGES_RELATION = 0;

const WEBHOOKS_SCHEMA = 'walgate';
const WEBHOOKS_TABLE = 'webhooks';

/**
 * One replication session's processing: decodes the ordered pgoutput messages, matches each
 * change to the subscriptions as they stood at its commit, and hands the matches straight to the
 * delivery stream (the WAL is the queue: nothing is written to Postgres before a delivery).
 *
 * The acknowledgement argument. A transaction is settled when every change of it that some
 * subscription takes is settled (delivered with its history row committed, or durably parked in
 * the retry queue — the stream calls back only then) and its subscription changes are saved. The
 * durable position is the end of the longest settled prefix of transactions, in commit order; it
 * is the only position ever acknowledged to Postgres or written to walgate.tailer_state. So every
 * change before an acknowledged position is in Postgres, as history or as a parked delivery, and
 * every change after it is still in the WAL: a crash, a restart or a new leader reads on from
 * there and loses nothing; what it reads twice keeps its ids (WAL positions), so the second copy
 * of a delivery is the same delivery. Subscription changes are saved as versions by position, so
 * the view is rebuilt as of whatever position reading resumes from.
 */
export class ReplicationSession {
  readonly #o: SessionOptions;
  readonly #view: SubscriptionView;
  readonly #relations = new Map<number, Relation>();
  readonly #keyColumns: KeyColumns;
  readonly #processedLsn: Lsn;
  #tx: OpenTransaction | null = null;
  /** Transactions read and not settled, in commit order (the last may still be open). */
  readonly #unsettled: OpenTransaction[] = [];
  #durable: Lsn;
  #failed = false;
  #paused: Promise<void> | null = null;
  #resume: (() => void) | null = null;
  #received = 0;
  #handled = 0;
  stats = { transactions: 0, changes: 0, deliveries: 0, batches: 0 };

  constructor(options: SessionOptions) {
    this.#o = options;
    this.#processedLsn = options.processedLsn;
    this.#durable = options.processedLsn;
    this.#view = new SubscriptionView(options.subscriptions);
    this.#keyColumns = new KeyColumns(options.primaryKey, options.log);
  }

  get failed(): boolean {
    return this.#failed;
  }

  /** The end of the settled prefix: everything before it is delivered or parked. */
  get durable(): Lsn {
    return this.#durable;
  }

  /** Counted by the plugin as each message arrives, before it waits in the library's queue. */
  received = (): number => this.#received++;

  /** True when every message received so far is handled and settled: a keepalive's position is then safe. */
  get idle(): boolean {
    return this.#received === this.#handled && this.#tx === null && this.#unsettled.length === 0;
  }

  /**
   * Stops handing changes over (a graceful stop): the message being handled finishes, the next
   * waits here until the session ends — with flow control on, the library reads nothing more. What
   * was not handed over is after the settled prefix, so the next session reads it again.
   */
  pause(): void {
    this.#paused ??= new Promise<void>((resolve) => (this.#resume = resolve));
  }

  async handle(msg: PgoutputMessage): Promise<void> {
    if (this.#paused) await this.#paused;
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
    this.#resume?.();
    this.#o.onFailure(err);
  }

  /** Records a durable position in walgate.tailer_state (through the fenced connection). */
  async saveDurable(position: Lsn = this.#durable): Promise<void> {
    if (this.#failed) return;
    await advancePosition(this.#o.fenced, this.#o.slotName, formatLsn(position), this.#o.clock());
    await pruneViewVersions(this.#o.fenced, formatLsn(position));
  }

  async #handle(msg: PgoutputMessage): Promise<void> {
    switch (msg.tag) {
      case 'relation':
        this.#relations.set(msg.relationOid, await describeRelation(msg, this.#o.types));
        // Sent again after DDL: the key may have changed with the columns.
        this.#keyColumns.forget(msg.relationOid);
        return;
      case 'begin':
        this.#tx = {
          commitLsn: msg.commitLsn,
          committedAt: msg.commitTime,
          endLsn: null,
          // The commit records of processed transactions all lie before the processed position.
          skip: msg.commitLsn < this.#processedLsn,
          index: 0,
          viewChanges: [],
          unsettled: 0,
          typesChecked: false,
        };
        if (!this.#tx.skip) this.#unsettled.push(this.#tx);
        return;
      case 'insert':
        return this.#change('INSERT', msg.relationOid, msg.new, null, false);
      case 'update':
        return this.#change('UPDATE', msg.relationOid, msg.new, msg.old, msg.oldIsKeyOnly);
      case 'delete':
        return this.#change('DELETE', msg.relationOid, null, msg.old, msg.oldIsKeyOnly);
      case 'message':
        return this.#message(msg);
      case 'truncate':
        for (const oid of msg.relationOids) await this.#truncate(oid);
        return;
      case 'commit': {
        const tx = this.#tx;
        this.#tx = null;
        if (!tx || tx.skip) return;
        this.stats.transactions++;
        tx.endLsn = msg.endLsn;
        if (tx.viewChanges.length > 0) this.#saveView(tx);
        this.#advance();
        return;
      }
      default:
        return;
    }
  }

  /** The change's place in its transaction (counted even when skipped: ids are positions), and its table; null when skipped. */
  #position(relationOid: number): { tx: OpenTransaction; index: number; rel: Relation } | null {
    const tx = this.#tx;
    if (!tx) throw new Error('pgoutput: change outside a transaction');
    const index = tx.index++;
    if (tx.skip) return null;
    const rel = this.#relations.get(relationOid);
    if (!rel) throw new Error(`pgoutput: change on unknown relation ${relationOid}`);
    return { tx, index, rel };
  }

  async #change(op: Operation, relationOid: number, newTuple: RawTuple | null, oldTuple: RawTuple | null, keyOnly: boolean) {
    const at = this.#position(relationOid);
    if (!at) return;
    const { tx, index, rel } = at;
    if (rel.schema === WEBHOOKS_SCHEMA && rel.name === WEBHOOKS_TABLE) {
      this.#subscriptionChange(tx, rel, op, newTuple ?? oldTuple!);
      return;
    }
    const feed = feedOf(rel);
    const subs = feed ? feedSubscriptions(this.#view, feed, rel, newTuple ?? oldTuple!) : this.#view.forTable(rel.schema, rel.name);
    if (subs.length === 0) return;
    this.stats.changes++;
    if (rel.userTypes && !tx.typesChecked) {
      // Once per transaction, and only for tables with such columns: a composite type altered
      // since it was resolved would render with its old attributes.
      tx.typesChecked = true;
      if (await this.#o.types.changedSinceResolved()) {
        for (const [oid, known] of this.#relations) this.#relations.set(oid, await describeRelation(known.message, this.#o.types));
      }
    }
    return this.#changeOf(op, relationOid, newTuple, oldTuple, keyOnly, index, tx, subs);
  }

  async #changeOf(
    op: Operation,
    relationOid: number,
    newTuple: RawTuple | null,
    oldTuple: RawTuple | null,
    keyOnly: boolean,
    index: number,
    tx: OpenTransaction,
    subs: readonly SubscriptionSpec[],
  ): Promise<void> {
    const rel = this.#relations.get(relationOid)!;
    const { change, missing } = decodeChange({
      operation: op,
      eventId: eventId(tx.commitLsn, index),
      committedAt: tx.committedAt,
      rel,
      newTuple,
      oldTuple,
      oldIsKeyOnly: keyOnly,
    });
    asFeedChange(change, rel, subs);
    this.#o.onChange?.(change);
    if (missing.length > 0) {
      this.#o.log.warn(
        { table: `${rel.schema}.${rel.name}`, columns: missing, event: change.eventId },
        'unchanged TOASTed values without an old row (is REPLICA IDENTITY FULL set?): sent as null',
      );
    }
    const orderedRows = subs.some((s) => s.ordering === 'row') ? changeRows(change, await this.#keyColumns.of(relationOid, rel)) : null;
    const matched = this.#o.previousEvents.stamp(matchDeliveries(subs, change, orderedRows));
    await this.#hand(tx, change, await this.#unrecorded(tx, index, relationOid, subs, matched));
  }

  /** One event per truncated table, for the subscriptions that opted into TRUNCATE. */
  async #truncate(relationOid: number): Promise<void> {
    const at = this.#position(relationOid);
    if (!at) return;
    const { tx, index, rel } = at;
    const subs = this.#view.forTable(rel.schema, rel.name);
    if (subs.length === 0) return;
    this.#o.onTruncate?.(rel.schema, rel.name);
    const change = truncateChange(eventId(tx.commitLsn, index), tx.committedAt, rel.schema, rel.name);
    this.#o.onChange?.(change);
    await this.#hand(tx, change, await this.#unrecorded(tx, index, relationOid, subs, matchDeliveries(subs, change)));
  }

  #unrecorded(tx: OpenTransaction, index: number, relationOid: number, subs: readonly SubscriptionSpec[], rows: DeliveryRecord[]) {
    if (!this.#o.recorded) return rows;
    const ids = subs.map((s) => s.id);
    return this.#o.recorded.unrecorded(tx.commitLsn, index, relationOid, ids, rows);
  }

  /** Hands a change's deliveries to the stream; the transaction waits for them to settle. */
  async #hand(tx: OpenTransaction, change: Change, rows: DeliveryRecord[], then?: () => void): Promise<void> {
    if (rows.length === 0) return;
    this.#o.onEvent?.(change.operation);
    this.stats.deliveries += rows.length;
    tx.unsettled++;
    // A returned promise is backpressure: the library pauses the socket while we await it.
    const accepted = this.#o.stream.accept(toEventRecord(change), rows, () => this.#settled(tx, then));
    if (accepted) await accepted;
  }

  /**
   * An outbox message (messages.ts): an INSERT of its schema's `_messages`, at its place in the
   * transaction. A non-transactional one has no commit to be ordered and acknowledged with: it is
   * not delivered (docs/outbox.md); walgate's own prefixes go to the hook either way.
   */
  async #message(msg: Extract<PgoutputMessage, { tag: 'message' }>): Promise<void> {
    if (msg.transactional && !this.#tx) throw new Error('pgoutput: transactional message outside a transaction');
    const tx = msg.transactional ? this.#tx : null;
    // Numbered like the changes around it: the ids after it are the same whoever reads it.
    const index = tx ? tx.index++ : null;
    if (tx?.skip) return;
    if (isReservedPrefix(msg.prefix)) {
      const at = { commitLsn: tx?.commitLsn ?? null, index, committedAt: tx?.committedAt ?? null };
      const injected = await this.#o.onReservedMessage?.({ message: msg, ...at });
      if (injected && tx) {
        const next = () => eventId(tx.commitLsn, tx.index++);
        await handInjected(injected, this.#view.get(injected.webhookId), next, (c, d, done) =>
          this.#hand(tx, c, this.#o.previousEvents.stamp([d]), done),
        );
      }
      return;
    }
    if (!tx || index === null) return;
    const subs = this.#view.forTable(messageSchema(msg.prefix), MESSAGES_TABLE);
    if (subs.length === 0) return;
    this.stats.changes++;
    const change = messageChange(eventId(tx.commitLsn, index), tx.committedAt, subs[0]!.schema, msg);
    await this.#hand(tx, change, await this.#unrecorded(tx, index, MESSAGES_RELATION, subs, matchDeliveries(subs, change)));
  }

  #subscriptionChange(tx: OpenTransaction, rel: Relation, op: Operation, tuple: RawTuple): void {
    const { row } = decodeRow(rel, tuple);
    // Every column renders as JSON (text[] as arrays, types.ts), so the row parses straight back.
    const json = (name: string) => {
      const i = row.indexOf.get(name);
      return i === undefined ? 'null' : row.fragments[i]!;
    };
    const id = JSON.parse(json('id')) as string;
    const told = this.#o.stream.subscriptionChanged(id);
    if (told) this.#settleAfter(tx, told); // the news is on its way (the delivery bus)
    if (op === 'DELETE') {
      this.#view.remove(id);
      tx.viewChanges.push({ op: 'delete', id });
      return;
    }
    const spec = specFromWalRow(json);
    this.#view.upsert(spec);
    tx.viewChanges.push({ op: 'upsert', spec });
  }

  /** Saves a committed transaction's view changes as versions valid from its end. */
  #saveView(tx: OpenTransaction): void {
    this.stats.batches++;
    this.#settleAfter(tx, saveViewChanges(this.#o.fenced, tx.viewChanges, formatLsn(tx.endLsn!)));
  }

  #settleAfter(tx: OpenTransaction, work: Promise<unknown>): void {
    tx.unsettled++; // settled once `work` is done; its failure ends the session
    work.then(
      () => this.#settled(tx),
      (err: unknown) => this.fail(err as Error),
    );
  }

  #settled(tx: OpenTransaction, then?: () => void): void {
    then?.(); // an injected row's own callback (injection.ts): it did settle, even if the session failed since
    if (this.#failed) return;
    tx.unsettled--;
    this.#advance();
  }

  /** Moves the durable position over the settled prefix of transactions. */
  #advance(): void {
    let moved = false;
    while (this.#unsettled.length > 0) {
      const head = this.#unsettled[0]!;
      if (head.endLsn === null || head.unsettled > 0) break;
      this.#unsettled.shift();
      this.#durable = head.endLsn;
      moved = true;
    }
    if (moved && !this.#failed) this.#o.onDurable(this.#durable);
  }
}
