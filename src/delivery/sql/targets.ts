import type { Pool } from '../../core/db/pool.js';
import type { BatchSettings } from '../batch.js';
import type { RateLimitSettings } from '../throttle.js';
import { RETRY_DELAYS_MS } from './retry-delays.js';
import { RATE_LIMIT } from './rate-limit.js';

// A subscription as delivery needs it (targets.ts caches it).

export interface TargetRow {
  project_id: string;
  environment: string;
  url: string;
  active: boolean;
  secret: Buffer;
  previous_secret: Buffer | null;
  previous_secret_until: Date | null;
  header_values: Buffer | null;
  history: 'full' | 'failures';
  batch: BatchSettings;
  /** Its own retry schedule, else its environment's; null: the platform's (retry-delays.ts). */
  retry_delays_ms: number[] | null;
  /** Its throttle (delivery/throttle.ts); null: none. */
  rate_limit: RateLimitSettings | null;
}

export async function readTarget(pool: Pool, webhookId: string): Promise<TargetRow | undefined> {
  const { rows } = await pool.query<TargetRow>(
    `SELECT project_id, environment, url, active, secret, header_values, history, ${RETRY_DELAYS_MS} AS retry_delays_ms,
            json_build_object('maxEvents', batch_max_events, 'maxWaitMs', batch_max_wait_ms, 'maxBytes', batch_max_bytes) AS batch,
            ${RATE_LIMIT} AS rate_limit,
            CASE WHEN previous_secret_until > now() THEN previous_secret END AS previous_secret,
            CASE WHEN previous_secret_until > now() THEN previous_secret_until END AS previous_secret_until
       FROM walgate.webhooks w WHERE id = $1`,
    [webhookId],
  );
  return rows[0];
}
