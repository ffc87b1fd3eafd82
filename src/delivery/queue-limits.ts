// How much the retry queue's worker (worker.ts) takes on at once.

/** Deliveries claimed in one round trip at most. */
export const MAX_CLAIM = 256;

/** Attempt results waiting to be written before attempts wait for the write. */
export const MAX_UNWRITTEN = 1000;

/**
 * How far claims run ahead of sending, in multiples of the in-flight caps. After an outage a
 * row-ordered backlog advances a run of changes per row per claim (batch-claims.ts), so what a
 * subscription may hold (perWebhook × CLAIM_AHEAD, 256 by default) is how many rows move per round
 * trip: at 4 the 60 s outage of the bench caught up in 133–138 s, at 16 in 107 s, with runs in
 * 29 s (docs/benchmarks.md). Held deliveries stay within TAILER_MAX_HELD_BYTES whatever this is;
 * requests within perWebhook.
 */
export const CLAIM_AHEAD = 16;
