import type { BreakerView } from '../delivery/breaker.js';
import { subscriptionState, type SubscriptionState } from '../delivery/subscription-state.js';
import type { DeliveryHealth } from '../delivery/sql/history.js';
import type { BatchSettings } from '../delivery/batch.js';
import { orderingOf, type Ordering } from './ordering.js';
import type { Problem } from './problems.js';
import type { WebhookRow } from './store.js';
import type { DestinationRef } from './destinations/schemas.js';
import { storedDestination } from './destinations/target.js';

/** How a subscription's deliveries go (GET /api/rest/_webhooks/{id}). */
export type WebhookHealth = DeliveryHealth & {
  breaker: BreakerView;
  disabledReason: string | null;
  disabledAt: string | null;
};

/** A subscription as the API shows it: never its secret. */
export interface WebhookView {
  id: string;
  table: string;
  events: string[];
  /** The https: URL it POSTs to; null when it publishes to a destination. */
  url: string | null;
  /** The broker destination it publishes to instead (docs/destinations.md); null for a URL. */
  destination: DestinationRef | null;
  active: boolean;
  /** How its deliveries go: healthy, failing, breaker_open or disabled (delivery/subscription-state.ts). */
  state: SubscriptionState;
  filter: Record<string, unknown> | null;
  select: string[] | null;
  /** 'row': a row's changes are delivered one at a time, in commit order; `{by}`: a group's. */
  ordering: Ordering;
  /** 'failures': changes delivered at their first attempt are counted, not listed. */
  history: 'full' | 'failures';
  /** With row or group ordering: 'hold' keeps a row's (a group's) later changes behind its dead letter. */
  onDead: 'skip' | 'hold';
  /** Batched delivery: maxEvents 1 is off (docs/webhooks.md: Batching). */
  batch: BatchSettings;
  createdAt: string;
  updatedAt: string;
  /** Set when delivery disabled it (its receiver answered 410 Gone); cleared when re-activated. */
  disabledReason: string | null;
  disabledAt: string | null;
  /** What it cannot follow any more (problems.ts); empty when healthy. */
  problems: Problem[];
  /** The names of its custom request headers; their values are never returned. */
  headers: string[];
  /** Its own retry schedule; null: the environment's default, else the platform's. */
  retry: { delaysMs: number[] } | null;
  /** Its throttle; null: none. */
  rateLimit: { perSecond: number; burst: number } | null;
}

/** `breaker`: its endpoint's (the shared row; closed and counting nothing when omitted). */
export function webhookView(w: WebhookRow, problems: Problem[] = [], breaker?: BreakerView): WebhookView {
  return {
    id: w.id,
    table: w.table,
    events: w.events,
    url: w.destinationId ? null : w.url,
    destination: storedDestination(w) ?? null,
    active: w.active,
    state: subscriptionState(w.active, breaker ?? { state: 'closed', consecutiveFailures: 0 }),
    filter: w.filter,
    select: w.select,
    ordering: orderingOf(w),
    history: w.history,
    onDead: w.onDead,
    batch: w.batch,
    createdAt: w.createdAt.toISOString(),
    updatedAt: w.updatedAt.toISOString(),
    disabledReason: w.disabledReason ?? null,
    disabledAt: w.disabledAt?.toISOString() ?? null,
    problems,
    headers: w.headerNames,
    retry: w.retryDelaysMs ? { delaysMs: w.retryDelaysMs } : null,
    rateLimit: w.rateLimitPerSecond === null ? null : { perSecond: w.rateLimitPerSecond, burst: w.rateLimitBurst ?? 1 },
  };
}
