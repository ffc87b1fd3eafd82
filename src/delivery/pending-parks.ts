/**
 * The stream's parks of in-flight deliveries not written yet (Job.parkWritten): each is told true
 * once its park commits, or false if the stream closes first — a late answer is recorded on the
 * parked row only after it is written (stream.ts), and never once the stream has closed.
 */
export class PendingParks {
  readonly #waiting = new Set<(written: boolean) => void>();

  /** A park handed to the journal: the promise of whether it was written, and what tells it so once it is. */
  open(): { written: Promise<boolean>; committed: () => void } {
    let tell!: (written: boolean) => void;
    const written = new Promise<boolean>((resolve) => (tell = resolve));
    this.#waiting.add(tell);
    const committed = () => {
      this.#waiting.delete(tell);
      tell(true);
    };
    return { written, committed };
  }

  /** The stream closes: every park not written yet is told false. */
  close(): void {
    for (const tell of this.#waiting) tell(false);
    this.#waiting.clear();
  }
}
