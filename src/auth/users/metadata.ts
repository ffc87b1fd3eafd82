import { z } from 'zod';

// userMetadata (the user's own): a JSON object of at most 16 KB. appMetadata (operators'): at most
// 4 KB, because it travels in every access token: base64 makes 4 KB about 5.5 KB, which keeps a
// token (even nested in a JWE, about 8.3 KB) within what tokens.ts accepts and proxies allow a header.

export const METADATA_MAX_BYTES = 16 * 1024;
export const APP_METADATA_MAX_BYTES = 4 * 1024;

function jsonObjectOfAtMost(bytes: number) {
  return z
    .record(z.string(), z.unknown())
    .refine((v) => Buffer.byteLength(JSON.stringify(v)) <= bytes, { message: `must be at most ${bytes} bytes as JSON` })
    .meta({ description: `A JSON object of at most ${bytes / 1024} KB.`, examples: [{ plan: 'pro' }] });
}

export const metadataObject = jsonObjectOfAtMost(METADATA_MAX_BYTES);
export const appMetadataObject = jsonObjectOfAtMost(APP_METADATA_MAX_BYTES);

export const userMetadataBody = z.object({ userMetadata: metadataObject });
