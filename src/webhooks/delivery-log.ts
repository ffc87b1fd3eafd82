import type { Context } from '../core/context.js';
import { AppError } from '../core/errors.js';
import {
  deliveryMinutes,
  discardDelivery,
  getDelivery,
  listDeliveries,
  retryDelivery,
  type DeliveryDetail,
  type DeliveryQuery,
  type DeliveryView,
  type MinuteBucket,
} from '../delivery/sql/history.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import type { WebhookRow } from './store.js';

// A subscription's delivery log: its pages, one delivery, a retry or discard by hand, the counts
// per minute. The caller has found the subscription (in the token's environment) first.

/** What the delivery log of a `history: "failures"` subscription cannot show. */
export const NOT_LISTED =
  'Changes delivered at their first attempt are not listed (history: "failures"): they are counted in the health figures and per minute. Every delivery that failed, waited or was retried is listed.';

export type DeliveryPageQuery = Omit<DeliveryQuery, 'after'> & { cursor?: string };

export interface DeliveryPage {
  deliveries: DeliveryView[];
  nextCursor: string | null;
  history: WebhookRow['history'];
  notListed: string | null;
}

/** An unknown delivery; under `history: "failures"` it may be one delivered at its first attempt, which has no row. */
function notFound(row: WebhookRow): AppError {
  return row.history === 'failures'
    ? new AppError(
        'DELIVERY_NOT_FOUND',
        'No delivery with this id for this webhook. Its history is "failures": a change delivered at its first attempt leaves no row.',
      )
    : new AppError('DELIVERY_NOT_FOUND');
}

export class DeliveryLog {
  constructor(private readonly ctx: Context) {}

  async page(row: WebhookRow, q: DeliveryPageQuery): Promise<DeliveryPage> {
    const after = q.cursor ? decodeCursor(q.cursor, /^del_\w{1,250}$/) : undefined;
    const rows = await listDeliveries(this.ctx.pool, row.id, { ...q, after, limit: q.limit + 1 });
    const page = rows.slice(0, q.limit);
    const last = page[page.length - 1];
    return {
      deliveries: page,
      nextCursor: rows.length > q.limit && last ? encodeCursor({ createdAt: new Date(last.createdAt), id: last.id }) : null,
      history: row.history,
      notListed: row.history === 'failures' ? NOT_LISTED : null,
    };
  }

  async delivery(row: WebhookRow, deliveryId: string): Promise<{ delivery: DeliveryDetail }> {
    const found = deliveryId.length <= 256 ? await getDelivery(this.ctx.pool, row.id, deliveryId) : undefined;
    if (!found) throw notFound(row);
    return { delivery: found };
  }

  async retry(row: WebhookRow, deliveryId: string): Promise<{ delivery: DeliveryView }> {
    const result = deliveryId.length <= 256 ? await retryDelivery(this.ctx.pool, row.id, deliveryId, this.ctx.clock()) : undefined;
    if (!result) throw notFound(row);
    if (result === 'unfinished') throw new AppError('DELIVERY_NOT_FINISHED');
    if (result === 'payload-gone') throw new AppError('DELIVERY_PAYLOAD_GONE');
    return { delivery: result };
  }

  /** A held dead letter (onDead "hold") lets its row go on; it stays dead and listed. */
  async discard(row: WebhookRow, deliveryId: string): Promise<{ delivery: DeliveryView }> {
    const result = deliveryId.length <= 256 ? await discardDelivery(this.ctx.pool, row.id, deliveryId) : undefined;
    if (!result) throw notFound(row);
    if (result === 'not-held') throw new AppError('DELIVERY_NOT_HELD');
    return { delivery: result };
  }

  async minutes(row: WebhookRow): Promise<{ minutes: MinuteBucket[] }> {
    return { minutes: await deliveryMinutes(this.ctx.pool, row.id, this.ctx.clock()) };
  }
}
