import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

// Prometheus metrics of one process (each daemon has its own registry, served at /metrics).
// Gauges that live in Postgres (queue depth, replication lag) are read at scrape time by the
// daemon that owns them (see src/ops/).

export class Metrics {
  readonly registry = new Registry();

  readonly httpDuration = new Histogram({
    name: 'walgate_http_request_duration_seconds',
    help: 'HTTP requests served by the api, by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  readonly authEvents = new Counter({
    name: 'walgate_auth_events_total',
    help: 'Authentication outcomes: login_ok, login_failed, login_locked, login_refused, login_unverified, signup, confirm_ok, confirm_failed, refresh_ok, refresh_reuse, reset_ok, logout',
    labelNames: ['event'] as const,
    registers: [this.registry],
  });

  readonly eventsProduced = new Counter({
    name: 'walgate_events_total',
    help: 'Data changes turned into events (taken by at least one subscription), by operation',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });

  readonly deliveriesFinished = new Counter({
    name: 'walgate_deliveries_total',
    help: 'Delivery attempts by outcome: delivered, retrying (failed, will retry), dead (failed for the last time)',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });

  readonly throttleWaits = new Counter({
    name: 'walgate_delivery_throttle_waits_total',
    help: "Times a throttled subscription's next request had to wait for its turn (its rateLimit); a wait is never an attempt",
    registers: [this.registry],
  });

  readonly webhooksDisabled = new Counter({
    name: 'walgate_webhooks_disabled_total',
    help: 'Subscriptions disabled by delivery because their receiver answered 410 Gone',
    registers: [this.registry],
  });

  readonly attemptDuration = new Histogram({
    name: 'walgate_delivery_attempt_duration_seconds',
    help: 'Duration of delivery attempts, by outcome (success, failure)',
    labelNames: ['outcome'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly commitToDelivery = new Histogram({
    name: 'walgate_delivery_latency_seconds',
    help: 'From the commit of a change to its successful delivery',
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });

  readonly retentionRemoved = new Counter({
    name: 'walgate_retention_removed_rows_total',
    help: 'Rows removed by retention, by table (and status, for deliveries: delivered, dead)',
    labelNames: ['table', 'status'] as const,
    registers: [this.registry],
  });

  readonly retentionOldest = new Gauge({
    name: 'walgate_retention_oldest_row_age_seconds',
    help: 'After each retention pass: age of the oldest kept row, by the time retention counts from (delivered_at, dead letters created_at, events committed_at, attempts started_at; for expiring rows, expires_at: above zero means expired rows wait for a pass)',
    labelNames: ['table', 'status'] as const,
    registers: [this.registry],
  });

  readonly truncates = new Counter({
    name: 'walgate_truncates_total',
    help: 'TRUNCATEs of watched tables read from the WAL (delivered to the subscriptions whose events include TRUNCATE)',
    registers: [this.registry],
  });

  readonly backfillRows = new Counter({
    name: 'walgate_backfill_rows_total',
    help: 'Rows a backfill handed to its subscription as READ events',
    registers: [this.registry],
  });

  readonly backfillRowsDropped = new Counter({
    name: 'walgate_backfill_rows_dropped_total',
    help: 'Rows read by a backfill page and dropped because a change touched them between its watermarks (the change is delivered instead)',
    registers: [this.registry],
  });

  readonly backfillPages = new Counter({
    name: 'walgate_backfill_pages_total',
    help: 'Backfill pages by outcome: handed (its rows delivered or parked, progress saved) or retried (read again: watermark not seen in time, leadership lost, subscription paused)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly backfillsActive = new Gauge({
    name: 'walgate_backfills_active',
    help: 'Backfills this tailer process is reading pages for',
    registers: [this.registry],
  });

  constructor(options: { defaultMetrics?: boolean } = {}) {
    // Process metrics, including event-loop delay (nodejs_eventloop_lag_p99_seconds and friends),
    // sampled every millisecond: a sample counts the whole interval, so a coarser one hides short stalls.
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 1 });
  }

  async text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
