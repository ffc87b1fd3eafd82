// The watermark window of one backfill page (the DBLog idea, as Debezium's incremental snapshots
// and Sequin use it): the page is read between a low and a high watermark that walgate writes into
// the WAL itself. Reading the WAL in order, the tailer sees
//
//   … low … [changes committed while the page was read, or just before] … high …
//
// A row of the page that any change between low and high touched may have been read before or
// after that change: its READ could be stale. Such rows are dropped from the page — the change
// itself is delivered, in its place — and the rows left are handed on at the high watermark, so
// in the stream each READ comes after every change committed before it was read and before every
// change after. With `ordering: "row"` a READ therefore takes its place in its row's order.

/** A row of the page, as the tailer will deliver it. */
export interface PageRow {
  /** The row's identity (order-keys.ts rowIdentity): what changes are matched against. */
  identity: string;
  /** Column values as to_jsonb renders them, in the table's column order. */
  fragments: string[];
}

export type WindowState = 'reading' | 'open' | 'handed';

export type HighOutcome =
  | { kind: 'rows'; rows: PageRow[]; dropped: number }
  /** The low watermark was never seen (or the page never read): nothing about the page can be trusted, read it again. */
  | { kind: 'retry'; reason: string };

export class WatermarkWindow {
  #state: WindowState = 'reading';
  #lowSeen = false;
  readonly #changed = new Set<string>();
  #rows: PageRow[] | null = null;
  #outcome: HighOutcome | null = null;
  #truncated = false;

  get state(): WindowState {
    return this.#state;
  }

  /** The low watermark was read from the WAL: changes from here on may race the page's read. */
  low(): void {
    if (this.#state === 'handed') return;
    this.#lowSeen = true;
    this.#state = 'open';
  }

  /** A change of the page's table was read from the WAL; `identities`: the rows it touched. */
  changed(identities: readonly string[]): void {
    if (this.#state !== 'open') return;
    for (const id of identities) this.#changed.add(id);
  }

  /** The table was truncated in the window: every row read may be gone. */
  truncated(): void {
    if (this.#state === 'open') this.#truncated = true;
  }

  /** Whether changes of the table are being collected (between low and high). */
  get collecting(): boolean {
    return this.#state === 'open';
  }

  /** The page as the SELECT returned it (after the low watermark committed, before the high one was written). */
  read(rows: PageRow[]): void {
    this.#rows = rows;
  }

  /**
   * The high watermark was read from the WAL: the page's rows that no change in the window
   * touched. Read again (a replication session restarted and re-read the WAL), it answers the same.
   */
  high(): HighOutcome {
    if (this.#outcome) return this.#outcome;
    if (!this.#lowSeen) this.#outcome = { kind: 'retry', reason: 'the low watermark was not seen' };
    else if (!this.#rows) this.#outcome = { kind: 'retry', reason: 'the page was not read' };
    else {
      const rows = this.#truncated ? [] : this.#rows.filter((r) => !this.#changed.has(r.identity));
      this.#outcome = { kind: 'rows', rows, dropped: this.#rows.length - rows.length };
    }
    this.#state = 'handed';
    this.#changed.clear();
    this.#rows = null;
    return this.#outcome;
  }
}
