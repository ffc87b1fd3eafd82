import { randomId } from '../core/crypto/tokens.js';

// Batched delivery (a subscription's `batch`; docs/webhooks.md: Batching): the shape of a send
// that carries several deliveries in one request. The stream gathers them (lanes.ts asks
// `gather`), the retry queue re-sends a batch whole (batch-claims.ts); the breaker and the
// throttles before the send, and the sender, are the same as for one delivery.

export interface BatchSettings {
  /** Changes per request at most; 1 is off (one request per change). */
  maxEvents: number;
  /** How long the oldest waiting change may wait for the batch to fill. */
  maxWaitMs: number;
  /** The request body at most, in bytes (one larger change still goes, alone). */
  maxBytes: number;
}

/** What a subscription that never asked for batching has (sql/075_batches.sql's defaults). */
export const BATCH_OFF: BatchSettings = { maxEvents: 1, maxWaitMs: 100, maxBytes: 1024 * 1024 };

export function isBatched(s: BatchSettings | null | undefined): s is BatchSettings {
  return s !== null && s !== undefined && s.maxEvents > 1;
}

/**
 * The settings a batch is gathered with in a tailer whose byte budget (TAILER_MAX_HELD_BYTES) is
 * `heldBytes`: no batch body larger than half of it, so that a batch in flight (its members and
 * its body, both counted) and the deliveries behind it fit — 1 MB rows go one or two to a request
 * rather than ten, and the tailer's memory stays where the budget puts it.
 */
export function withinBudget(s: BatchSettings, heldBytes: number): BatchSettings {
  return { ...s, maxBytes: Math.max(1024, Math.min(s.maxBytes, Math.floor(heldBytes / 2))) };
}

/** A batch's id: its `webhook-id`, kept on each of its deliveries so every retry sends it again. */
export function newBatchId(): string {
  return randomId('bat_');
}

const OPEN = '{"events":[';
const CLOSE = ']}';

/** The body of a batch: each event's body exactly as it is delivered alone, in order. */
export function batchBody(bodies: readonly string[]): string {
  return `${OPEN}${bodies.join(',')}${CLOSE}`;
}

/** What one more event adds to a batch's body (its bytes and a comma). */
export function batchBytes(body: string): number {
  return Buffer.byteLength(body) + 1;
}

/** The batch body's fixed part. */
export const BATCH_OVERHEAD = OPEN.length + CLOSE.length;

export type Gathered = { take: number } | { waitMs: number };

/**
 * How many of a subscription's waiting changes (oldest first, `bytes` of each as batchBytes
 * counts it) go in one request now — or, while the batch could still grow, how long to wait
 * for more. Full by count or by bytes: it goes. Otherwise it goes once its oldest change has
 * waited maxWaitMs, or at once when `now` says so (a graceful stop, a change past its bound).
 * Always at least one: a change larger than maxBytes goes alone.
 */
export function gather(bytes: readonly number[], s: BatchSettings, headWaitedMs: number, now = false): Gathered {
  let n = 0;
  let size = BATCH_OVERHEAD;
  while (n < bytes.length && n < s.maxEvents) {
    if (n > 0 && size + bytes[n]! > s.maxBytes) return { take: n }; // full by bytes
    size += bytes[n]!;
    n++;
  }
  // Full by count, by bytes (the next would not fit, or one change alone is past maxBytes): it goes.
  if (n === s.maxEvents || n < bytes.length || size >= s.maxBytes) return { take: n };
  if (now || headWaitedMs >= s.maxWaitMs) return { take: n };
  return { waitMs: s.maxWaitMs - headWaitedMs };
}

/**
 * Packs units into batches in order, none waiting (the retry queue's deliveries that were never
 * batched): a unit is one delivery, or a row's chain — its changes in commit order (sql/chains.ts)
 * — which is never split between two batches (two batches go at once: a row's later change could
 * overtake its earlier one). A unit too large for a batch of its own keeps the prefix that fits
 * (at least its first); the rest is `left` (given back to the queue, behind the prefix).
 */
export function pack<T>(units: readonly (readonly T[])[], bytes: (item: T) => number, s: BatchSettings): { batches: T[][]; left: T[] } {
  const batches: T[][] = [];
  const left: T[] = [];
  let current: T[] = [];
  let size = BATCH_OVERHEAD;
  for (const unit of units) {
    let n = 0;
    let alone = 0;
    while (n < unit.length && n < s.maxEvents && (n === 0 || BATCH_OVERHEAD + alone + bytes(unit[n]!) <= s.maxBytes))
      alone += bytes(unit[n++]!);
    left.push(...unit.slice(n));
    if (current.length > 0 && (current.length + n > s.maxEvents || size + alone > s.maxBytes)) {
      batches.push(current);
      current = [];
      size = BATCH_OVERHEAD;
    }
    current.push(...unit.slice(0, n));
    size += alone;
  }
  if (current.length > 0) batches.push(current);
  return { batches, left };
}

/** Deliveries (in order, `bytes` of each) cut into batches as `gather` would, none waiting. */
export function chunk<T>(items: readonly T[], bytes: (item: T) => number, s: BatchSettings): T[][] {
  return pack(
    items.map((item) => [item]),
    bytes,
    s,
  ).batches;
}
