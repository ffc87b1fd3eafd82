import type { DeliveryRecord } from './events.js';

// A row-ordered delivery names the change of its row that its subscription was handed before
// (`previous_event_id` in the body), so that a receiver can tell a gap: with `onDead: "skip"` a
// dead change is passed over, and the next change of the row names an id the receiver never saw.
// The tailer remembers the last event id per order key (keys name their subscription, so a change
// filtered out of a subscription is not its row's previous there), in commit order as it reads.
// In memory and bounded: after a restart, or once a quiet row is evicted, the previous change is
// unknown and the field is null — never a wrong id. The session stamps what it matched before it
// drops the deliveries an earlier session recorded, so a change read again still counts as its
// row's last.

/** Order keys remembered (least recently changed evicted first): about 15 MB at the bound. */
export const PREVIOUS_EVENTS_MAX = 100_000;

export class PreviousEvents {
  readonly #last = new Map<string, string>();

  constructor(private readonly max = PREVIOUS_EVENTS_MAX) {}

  /** Sets `previousEventId` on each ordered delivery (commit order), and remembers it as its keys' last. */
  stamp(deliveries: DeliveryRecord[]): DeliveryRecord[] {
    for (const d of deliveries) {
      if (!d.orderKeys) continue;
      let previous: string | null = null;
      for (const key of d.orderKeys) {
        const last = this.#last.get(key);
        // Event ids sort in commit order. A later one is remembered when the stream is read again
        // from an earlier position (a new session after a failure): unknown, not a wrong id.
        if (last !== undefined && last < d.eventId && (previous === null || last > previous)) previous = last;
      }
      d.previousEventId = previous;
      for (const key of d.orderKeys) {
        this.#last.delete(key); // re-inserted last: the Map's order is the eviction order
        this.#last.set(key, d.eventId);
      }
      while (this.#last.size > this.max) this.#last.delete(this.#last.keys().next().value!);
    }
    return deliveries;
  }
}
