import { z } from 'zod';

// A retry schedule as an environment's default (`webhookRetryDelaysMs`) and a subscription's own
// (`retry.delaysMs`, webhooks/retry-policy.ts) take it: the waits before attempts 1..n in ms, as
// many attempts as values. A fresh change's first attempt goes as soon as it is read: the first
// value is 0.

export const MAX_RETRY_ATTEMPTS = 20;
export const MAX_RETRY_DELAY_MS = 86_400_000;

export const retryDelays = z
  .array(
    z
      .int('must be a whole number of milliseconds')
      .min(0, 'must be at least 0')
      .max(MAX_RETRY_DELAY_MS, `must be at most ${MAX_RETRY_DELAY_MS} (24 h)`),
  )
  .min(1, 'must hold at least one attempt')
  .max(MAX_RETRY_ATTEMPTS, `must hold at most ${MAX_RETRY_ATTEMPTS} attempts`)
  .refine((d) => d[0] === 0, { message: 'must start with 0: the first attempt goes as soon as the change is read', path: [0] });
