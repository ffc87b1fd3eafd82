import type { WebhookRow } from './store.js';

/** A subscription as the API shows it: never its secret. */
export interface WebhookView {
  id: string;
  table: string;
  events: string[];
  url: string;
  active: boolean;
  filter: Record<string, string | number | boolean | null> | null;
  select: string[] | null;
  createdAt: string;
  updatedAt: string;
  /** Set when delivery disabled it (its receiver answered 410 Gone); cleared when re-activated. */
  disabledReason: string | null;
  disabledAt: string | null;
}

export function webhookView(w: WebhookRow): WebhookView {
  return {
    id: w.id,
    table: w.table,
    events: w.events,
    url: w.url,
    active: w.active,
    filter: w.filter,
    select: w.select,
    createdAt: w.createdAt.toISOString(),
    updatedAt: w.updatedAt.toISOString(),
    disabledReason: w.disabledReason ?? null,
    disabledAt: w.disabledAt?.toISOString() ?? null,
  };
}
