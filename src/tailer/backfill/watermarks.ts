import type { Queryable } from '../../core/db/pool.js';

// The watermarks a backfill page is read between: logical messages walgate writes into the WAL
// itself (transactional, each in a transaction of its own, so it has a commit position the
// session orders it by). The prefix is walgate's (tailer/messages.ts): never delivered to
// `_messages` subscriptions; the session hands it to the backfill runner.

export const WATERMARK_PREFIX = 'walgate.backfill';

export type Mark = 'low' | 'high';

export interface Watermark {
  /** The page's random token: a watermark of a page this process did not read is ignored. */
  page: string;
  mark: Mark;
}

export async function emitWatermark(db: Queryable, w: Watermark): Promise<void> {
  await db.query('SELECT pg_logical_emit_message(true, $1, $2)', [WATERMARK_PREFIX, JSON.stringify(w)]);
}

/** The watermark a message carries; undefined for anything else (another `walgate.` prefix, a forged one). */
export function parseWatermark(prefix: string, content: Buffer): Watermark | undefined {
  if (prefix !== WATERMARK_PREFIX || content.length > 1024) return undefined;
  try {
    const w = JSON.parse(content.toString('utf8')) as Partial<Watermark>;
    if (typeof w.page === 'string' && (w.mark === 'low' || w.mark === 'high')) return { page: w.page, mark: w.mark };
  } catch {
    // not ours
  }
  return undefined;
}
