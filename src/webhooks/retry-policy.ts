import { z } from 'zod';
import { retryDelays } from '../projects/retry-delays.js';

// A subscription's retry policy: `retry: {delaysMs: [...]}`. Null (or absent): the environment's
// default (`webhookRetryDelaysMs` in its settings), else the platform's WEBHOOK_RETRY_DELAYS_MS
// (by default 0/1/5/30/300 s). The delivery engine reads the schedule a delivery has with its
// subscription (delivery/sql/retry-delays.ts); the breaker's bound on waiting follows it
// (delivery/schedule.ts).

export const retryPolicy = z.strictObject({ delaysMs: retryDelays }).meta({
  description:
    "The waits before attempts 1..n in ms (± 20 %), as many attempts as values (1-20, each ≤ 24 h, the first 0); after the last failed attempt the delivery is dead. `null`: the environment's default (`webhookRetryDelaysMs`), else the platform's (0, 1 s, 5 s, 30 s, 5 min).",
  examples: [{ delaysMs: [0, 200, 200] }],
});
