import type { ConnectionOptions } from 'node:tls';
import { Agent } from 'undici';
import { VERSION } from '../core/version.js';
import type { HostLookup } from '../core/net/address-policy.js';
import { guardedConnector } from './connector.js';

export interface SendResult {
  /** The subscriber's status, when it answered. */
  status: number | null;
  ok: boolean;
  /** Why it failed, short and free of secrets. */
  error: string | null;
  durationMs: number;
  /** The answer's Retry-After header, if any (outcome.ts reads it on 429 / 503). */
  retryAfter?: string;
  /** The first KiB of the answer's body as text (for the delivery log); null without an answer. */
  responseBody: string | null;
}

export interface SenderOptions {
  timeoutMs: number;
  allowPrivateNetworks: boolean;
  /** Sockets per subscriber origin: one slow endpoint cannot take them all. */
  connectionsPerOrigin?: number;
  /** Extra TLS settings (tests trust their own CA here; production uses NODE_EXTRA_CA_CERTS). */
  tls?: ConnectionOptions;
  /** How subscriber host names are resolved (the SSRF guard judges what this returns). */
  lookup?: HostLookup;
}

const MAX_ERROR = 200;
const RESPONSE_BODY_LIMIT = 64 * 1024;
/** What the delivery log keeps of an answer. */
export const RESPONSE_BODY_KEPT = 1024;

/**
 * POSTs bodies through keep-alive connection pools (undici, one pool per origin). Redirects are
 * not followed: a 3xx is an answer, and not a 2xx, so the attempt failed. The time-out covers the
 * whole attempt, from connecting to the end of the response.
 */
export class Sender {
  readonly #agent: Agent;
  readonly #timeoutMs: number;

  constructor(options: SenderOptions) {
    this.#timeoutMs = options.timeoutMs;
    this.#agent = new Agent({
      connect: guardedConnector({
        allowPrivate: options.allowPrivateNetworks,
        tls: options.tls,
        timeoutMs: options.timeoutMs,
        lookup: options.lookup,
      }),
      connections: options.connectionsPerOrigin ?? 8,
      keepAliveTimeout: 30_000,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
  }

  async post(url: URL, headers: Record<string, string>, body: string): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    try {
      const res = await this.#agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': `walgate/${VERSION}`, ...headers },
        body,
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      const responseBody = await readAnswer(res.body);
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      const retryAfter = res.headers['retry-after'];
      return {
        status: res.statusCode,
        ok,
        error: ok ? null : `HTTP ${res.statusCode}`,
        durationMs: elapsed(),
        responseBody,
        ...(retryAfter === undefined ? {} : { retryAfter: Array.isArray(retryAfter) ? retryAfter[0]! : retryAfter }),
      };
    } catch (err) {
      return { status: null, ok: false, error: describe(err, this.#timeoutMs), durationMs: elapsed(), responseBody: null };
    }
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }
}

/**
 * Reads a bounded part of the answer, so the connection can be reused, and keeps its first KiB as
 * text. A longer answer is cut off (the connection is then closed, not reused).
 */
async function readAnswer(body: AsyncIterable<Buffer>): Promise<string> {
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let seen = 0;
  try {
    for await (const chunk of body) {
      seen += chunk.length;
      if (keptBytes < RESPONSE_BODY_KEPT) {
        const part = chunk.subarray(0, RESPONSE_BODY_KEPT - keptBytes);
        kept.push(part);
        keptBytes += part.length;
      }
      if (seen > RESPONSE_BODY_LIMIT) break;
    }
  } catch {
    // An answer that breaks off mid-body: its status stands, and what arrived is kept.
  }
  // Postgres text cannot hold NUL; a multi-byte character cut at the KiB decodes as U+FFFD.
  return Buffer.concat(kept).toString('utf8').replaceAll('\u0000', '\uFFFD');
}

function describe(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  let text: string;
  if (
    e.name === 'TimeoutError' ||
    e.code === 'UND_ERR_HEADERS_TIMEOUT' ||
    e.code === 'UND_ERR_BODY_TIMEOUT' ||
    e.code === 'UND_ERR_CONNECT_TIMEOUT'
  ) {
    text = `no answer within ${timeoutMs} ms`;
  } else {
    const code = e.code ?? e.cause?.code;
    text = `${code ? `${code}: ` : ''}${e.message ?? String(err)}`;
  }
  return text.length > MAX_ERROR ? `${text.slice(0, MAX_ERROR - 1)}…` : text;
}
