import type { CapturedDelivery } from './sink.js';
import { deliveryId, eventId } from './events.js';
import type { Lsn } from './lsn.js';

/** How many change positions of a transaction one look-up covers. */
const CHUNK = 1000;

/**
 * Fewer duplicates after a crash. Postgres restarts decoding at a transaction boundary, so a
 * tailer killed while delivering a large transaction reads all of it again. Its deliveries that
 * were already recorded (delivered, or parked in the retry queue: walgate.deliveries) need not be
 * sent again: a transaction committed before this session started may have been partly
 * processed by an earlier one, and its deliveries are looked up by their exact ids (event and
 * subscription make the id), a chunk of positions at a time per table. Transactions committed
 * later were never read before and are not looked up.
 */
export class RecordedDeliveries {
  #commit: Lsn | null = null;
  /** Per relation: the positions looked up so far (exclusive end). */
  readonly #checkedUpTo = new Map<number, number>();
  readonly #recorded = new Set<string>();

  constructor(
    /** The WAL position when the session started: later commits were never read. */
    private readonly startedAt: Lsn,
    private readonly lookup: (ids: string[]) => Promise<string[]>,
  ) {}

  /** The deliveries of a change that are not recorded yet. */
  async unrecorded(
    commitLsn: Lsn,
    index: number,
    relationOid: number,
    webhookIds: readonly string[],
    rows: CapturedDelivery[],
  ): Promise<CapturedDelivery[]> {
    if (rows.length === 0 || commitLsn >= this.startedAt) return rows;
    if (this.#commit !== commitLsn) {
      this.#commit = commitLsn;
      this.#checkedUpTo.clear();
      this.#recorded.clear();
    }
    if (index >= (this.#checkedUpTo.get(relationOid) ?? 0)) {
      const ids: string[] = [];
      for (let i = index; i < index + CHUNK; i++) for (const wh of webhookIds) ids.push(deliveryId(wh, eventId(commitLsn, i)));
      for (const id of await this.lookup(ids)) this.#recorded.add(id);
      this.#checkedUpTo.set(relationOid, index + CHUNK);
    }
    return this.#recorded.size === 0 ? rows : rows.filter((r) => !this.#recorded.has(r.id));
  }
}
