import { BATCH_OFF, type BatchSettings } from '../delivery/batch.js';
import type { WebhookRow } from './store.js';

// How a subscription is delivered — batching, retry schedule, throttle — as stored, from a create
// body, or from a PATCH over what is stored: a setting left out keeps its value, `null` turns it off
// (no batching, the environment's schedule, no throttle), and a body names a setting whole.

type Stored = Pick<WebhookRow, 'batch' | 'retryDelaysMs' | 'rateLimitPerSecond' | 'rateLimitBurst'>;

interface Given {
  batch?: BatchSettings | null;
  retry?: { delaysMs: number[] } | null;
  rateLimit?: { perSecond: number; burst: number } | null;
}

const OFF: Stored = { batch: BATCH_OFF, retryDelaysMs: null, rateLimitPerSecond: null, rateLimitBurst: null };

export function deliverySettings(body: Given, stored: Stored = OFF): Stored {
  return {
    batch: body.batch === undefined ? stored.batch : (body.batch ?? BATCH_OFF),
    retryDelaysMs: body.retry === undefined ? stored.retryDelaysMs : (body.retry?.delaysMs ?? null),
    ...(body.rateLimit === undefined
      ? { rateLimitPerSecond: stored.rateLimitPerSecond, rateLimitBurst: stored.rateLimitBurst }
      : { rateLimitPerSecond: body.rateLimit?.perSecond ?? null, rateLimitBurst: body.rateLimit?.burst ?? null }),
  };
}
