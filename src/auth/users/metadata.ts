import { z } from 'zod';

// userMetadata (the user's own) and appMetadata (operators'): JSON objects of at most 16 KB each.
// appMetadata travels in every access token, so its bound is also a bound on token size.

export const METADATA_MAX_BYTES = 16 * 1024;

export const metadataObject = z
  .record(z.string(), z.unknown())
  .refine((v) => Buffer.byteLength(JSON.stringify(v)) <= METADATA_MAX_BYTES, {
    message: `must be at most ${METADATA_MAX_BYTES} bytes as JSON`,
  })
  .meta({ description: 'A JSON object of at most 16 KB.', examples: [{ plan: 'pro' }] });

export const userMetadataBody = z.object({ userMetadata: metadataObject });
