// How far a partition's reader has read, by event: a partition carries a row's changes in commit
// order, so a delivery at or before the furthest event read is one published again (a new leading
// tailer's run the duplicate window did not drop) and is looked up before it is sent; one past it
// is new. At the furthest event itself (its deliveries to several subscriptions), the ids tell.

/** Compares two event ids (evt_<commit LSN, 16 hex digits>_<index, at least 6 digits>) by position. */
export function compareEventIds(a: string, b: string): number {
  const lsnA = a.slice(4, 20);
  const lsnB = b.slice(4, 20);
  if (lsnA !== lsnB) return lsnA < lsnB ? -1 : 1;
  const indexA = a.slice(21);
  const indexB = b.slice(21);
  if (indexA.length !== indexB.length) return indexA.length < indexB.length ? -1 : 1;
  return indexA === indexB ? 0 : indexA < indexB ? -1 : 1;
}

export class ReadPosition {
  #furthest = '';
  #atFurthest = new Set<string>();

  /** Notes the delivery as read; true when it may have been read before (then it is looked up). */
  mayRepeat(eventId: string, deliveryId: string): boolean {
    const c = this.#furthest === '' ? 1 : compareEventIds(eventId, this.#furthest);
    if (c > 0) {
      this.#furthest = eventId;
      this.#atFurthest = new Set([deliveryId]);
      return false;
    }
    if (c < 0 || this.#atFurthest.has(deliveryId)) return true;
    this.#atFurthest.add(deliveryId);
    return false;
  }
}
