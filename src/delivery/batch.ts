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

/** Chunks deliveries (in order, `bytes` of each) into batches as `gather` would, none waiting: for the retry queue's unbatched ones. */
export function chunk<T>(items: readonly T[], bytes: (item: T) => number, s: BatchSettings): T[][] {
  const out: T[][] = [];
  let i = 0;
  while (i < items.length) {
    const rest = items.slice(i, i + s.maxEvents);
    const g = gather(
      rest.map((item) => bytes(item)),
      s,
      0,
      true,
    );
    const take = 'take' in g ? g.take : rest.length;
    out.push(items.slice(i, i + take));
    i += take;
  }
  return out;
}
