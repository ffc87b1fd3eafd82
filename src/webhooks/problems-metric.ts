import { Gauge } from 'prom-client';
import type { Context } from '../core/context.js';
import { AUTH_EVENTS_TABLE, capturedRelation, MESSAGES_TABLE, OPERATIONS_TABLE } from '../tailer/capture/index.js';

// walgate_webhook_problems{code}: subscriptions that cannot follow their table, counted at scrape
// time from the catalog (the same rules as problems.ts, for every tenant at once). A subscription
// on a feed (`_auth_events`, `_operations`) is judged against walgate's own table, which is only
// ever inserted into.

const FEEDS = [AUTH_EVENTS_TABLE, OPERATIONS_TABLE].map((name) => ({ name, ...capturedRelation('', name) }));

// The columns a filter names (as language.ts's filterColumns): every object key that is not an
// operator (operator values hold no objects), and the names listed by each $changed.
const FILTER_COLUMNS = `
  SELECT k #>> '{}' FROM jsonb_path_query(coalesce(f, '{}'), 'strict $.** ? (@.type() == "object").keyvalue() ? (!(@.key starts with "$")).key') k
  UNION
  SELECT k #>> '{}' FROM jsonb_path_query(coalesce(f, '{}'), 'lax $.** ? (@.type() == "object")."$changed"[*] ? (@.type() == "string")') k`;

const COUNTS = `
WITH w AS (
  SELECT w.filter, w.select_fields, w.ordering_by, c.oid AS relid, f.name IS NOT NULL AS audit
    FROM walgate.webhooks w
    LEFT JOIN unnest($1::text[], $2::text[], $3::text[]) AS f(name, schema_name, table_name) ON f.name = w.table_name
    LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = coalesce(f.schema_name, w.schema_name)
    LEFT JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = coalesce(f.table_name, w.table_name)
     AND c.relkind IN ('r', 'p')
   WHERE w.table_name <> $4 -- outbox messages (_messages) are no table: nothing to drift
)
SELECT count(*) FILTER (WHERE relid IS NULL OR NOT EXISTS (
         SELECT 1 FROM pg_catalog.pg_publication_rel r JOIN pg_catalog.pg_publication p ON p.oid = r.prpubid
          WHERE p.pubname = 'walgate' AND r.prrelid = relid))::int AS "TABLE_MISSING",
       count(*) FILTER (WHERE relid IS NOT NULL AND EXISTS (
         SELECT 1 FROM (SELECT filter AS f) fc, LATERAL (${FILTER_COLUMNS}) AS c(k)
          WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a WHERE a.attrelid = relid AND a.attname = k AND a.attnum > 0 AND NOT a.attisdropped)))::int AS "FILTER_COLUMN_MISSING",
       count(*) FILTER (WHERE relid IS NOT NULL AND EXISTS (
         SELECT 1 FROM unnest(coalesce(select_fields, '{}')) k
          WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a WHERE a.attrelid = relid AND a.attname = k AND a.attnum > 0 AND NOT a.attisdropped)))::int AS "SELECT_COLUMN_MISSING",
       count(*) FILTER (WHERE relid IS NOT NULL AND EXISTS (
         SELECT 1 FROM unnest(coalesce(ordering_by, '{}')) k
          WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a WHERE a.attrelid = relid AND a.attname = k AND a.attnum > 0 AND NOT a.attisdropped)))::int AS "ORDERING_COLUMN_MISSING",
       count(*) FILTER (WHERE relid IS NOT NULL AND NOT audit AND EXISTS (
         SELECT 1 FROM (SELECT relid AS r UNION SELECT p.relid FROM pg_partition_tree(relid) p) t
           JOIN pg_catalog.pg_class pc ON pc.oid = t.r WHERE pc.relreplident <> 'f'))::int AS "REPLICA_IDENTITY_CHANGED"
  FROM w`;

/** Registered once per process registry, by the api (it answers `problems` too). */
export function registerProblemGauge(ctx: Context): void {
  const name = 'walgate_webhook_problems';
  if (ctx.metrics.registry.getSingleMetric(name)) return;
  new Gauge({
    name,
    help: 'Subscriptions that cannot follow their table, by problem code (TABLE_MISSING, FILTER_COLUMN_MISSING, SELECT_COLUMN_MISSING, ORDERING_COLUMN_MISSING, REPLICA_IDENTITY_CHANGED)',
    labelNames: ['code'] as const,
    registers: [ctx.metrics.registry],
    async collect() {
      const { rows } = await ctx.pool
        .query<Record<string, number>>(COUNTS, [
          FEEDS.map((f) => f.name),
          FEEDS.map((f) => f.schema),
          FEEDS.map((f) => f.table),
          MESSAGES_TABLE,
        ])
        .catch(() => ({ rows: [] as Array<Record<string, number>> }));
      for (const [code, n] of Object.entries(rows[0] ?? {})) this.set({ code }, n);
    },
  });
}
