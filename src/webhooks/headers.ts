import { z } from 'zod';
import { MAX_CUSTOM_HEADERS, RESERVED_HEADERS, TEST_EVENT_HEADER } from '../delivery/custom-headers.js';

// The `headers` of a subscription's body: checked here, sealed by delivery/custom-headers.ts.

/** An RFC 9110 token. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;
/** Visible ASCII, spaces and tabs inside: no CR, LF or NUL can split the request. */
const HEADER_VALUE = /^[\x21-\x7e]([\x20-\x7e\t]{0,1022}[\x21-\x7e])?$/;

export const headersSchema = z
  .record(
    z.string().regex(HEADER_NAME, "must be a header name (letters, digits and !#$%&'*+.^_`|~-, at most 64)"),
    z.string().regex(HEADER_VALUE, 'must be 1-1024 visible ASCII characters (spaces inside only), without line breaks'),
  )
  .superRefine((h, ctx) => {
    const names = Object.keys(h);
    if (names.length > MAX_CUSTOM_HEADERS) ctx.addIssue({ code: 'custom', message: `must have at most ${MAX_CUSTOM_HEADERS} headers` });
    const seen = new Set<string>();
    for (const name of names) {
      const lower = name.toLowerCase();
      if (RESERVED_HEADERS.has(lower))
        ctx.addIssue({ code: 'custom', path: [name], message: 'is set by walgate and may not be overridden' });
      if (seen.has(lower)) ctx.addIssue({ code: 'custom', path: [name], message: 'repeats a header name (names are case-insensitive)' });
      seen.add(lower);
    }
  })
  .meta({
    description: `Up to ${MAX_CUSTOM_HEADERS} request headers sent on every attempt, name → value. The values are encrypted at rest and never returned (the names are, in \`headers\`). Names walgate sets (content-type, host, user-agent, the signature, id and event headers, ${TEST_EVENT_HEADER}) and hop-by-hop headers are refused. On update the given set replaces the previous one; \`null\` or \`{}\` removes them.`,
    // A value the schema above accepts (visible ASCII: an ellipsis is not), and no real-looking key.
    examples: [{ 'X-Api-Key': 'your-receiver-api-key' }],
  });
