import { Agent, fetch as undiciFetch } from 'undici';
import type { HostLookup } from '../../core/net/address-policy.js';
import { guardedConnector } from '../../core/net/guarded-connector.js';
import { VERSION } from '../../core/version.js';

// Every request walgate makes to an identity provider (discovery, keys, token, userinfo) goes
// through here: the URLs are the operator's, and a provider URL that resolves into our own network
// (metadata service, Redis, Postgres) must not become a way in. The address a connection really
// uses is checked, after DNS, so a name that rebinds between two requests is caught too.
// PROVIDER_ALLOW_PRIVATE_NETWORKS=true lifts the address rule and allows http: (tests, on-prem
// issuers on a private network).

/** A provider that could not be reached (network, address refused, time-out, oversized answer). */
export class ProviderUnreachableError extends Error {
  override name = 'ProviderUnreachableError';
}

/** The largest answer read from a provider (discovery documents and key sets are a few KB). */
const MAX_RESPONSE_BYTES = 1024 * 1024;

export interface ProviderFetchOptions {
  allowPrivate: boolean;
  lookup: HostLookup;
  timeoutMs: number;
}

/** What openid-client's `customFetch` is given. */
type FetchInit = { method?: string; headers?: Record<string, string> | Headers; body?: unknown; redirect?: 'manual'; signal?: AbortSignal };

export type ProviderFetch = (url: string, init: FetchInit) => Promise<Response>;

export function providerFetch(options: ProviderFetchOptions): ProviderFetch {
  // The same guard as webhook deliveries: the address checked is the address connected to.
  const agent = new Agent({ connect: guardedConnector(options) });

  return async (url, init) => {
    const target = new URL(url);
    if (target.protocol !== 'https:' && !(options.allowPrivate && target.protocol === 'http:'))
      throw new ProviderUnreachableError(`refused: ${target.origin} is not https (PROVIDER_ALLOW_PRIVATE_NETWORKS allows http)`);
    const headers: Record<string, string> = {};
    new Headers(init.headers as Record<string, string> | undefined).forEach((value, key) => (headers[key] = value));
    headers['user-agent'] ??= `walgate/${VERSION}`;
    const signal = init.signal
      ? AbortSignal.any([init.signal, AbortSignal.timeout(options.timeoutMs)])
      : AbortSignal.timeout(options.timeoutMs);
    let res;
    try {
      res = await undiciFetch(target, {
        method: init.method ?? 'GET',
        headers,
        body: init.body as string | undefined,
        redirect: 'manual', // a provider's redirect could point anywhere
        signal,
        dispatcher: agent,
      });
    } catch (err) {
      throw new ProviderUnreachableError(
        `${target.origin}: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`,
      );
    }
    const declared = Number(res.headers.get('content-length') ?? 0);
    if (declared > MAX_RESPONSE_BYTES)
      throw new ProviderUnreachableError(`${target.origin}: answer larger than ${MAX_RESPONSE_BYTES} bytes`);
    const chunks: Uint8Array[] = [];
    let size = 0;
    if (res.body) {
      for await (const chunk of res.body) {
        size += chunk.byteLength;
        if (size > MAX_RESPONSE_BYTES)
          throw new ProviderUnreachableError(`${target.origin}: answer larger than ${MAX_RESPONSE_BYTES} bytes`);
        chunks.push(chunk);
      }
    }
    const empty = [101, 204, 205, 304].includes(res.status);
    const answered: [string, string][] = [];
    res.headers.forEach((value, key) => answered.push([key, value]));
    return new Response(empty ? null : Buffer.concat(chunks), { status: res.status, headers: answered });
  };
}
