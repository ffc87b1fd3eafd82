import type { ConnectionOptions } from 'node:tls';
import { Pool, type Dispatcher } from 'undici';
import { VERSION } from '../core/version.js';
import type { HostLookup } from '../core/net/address-policy.js';
import { guardedConnector } from '../core/net/guarded-connector.js';

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
  /** The answer's headers (at most RESPONSE_HEADERS_KEPT, values cut at 256 characters); absent without an answer. */
  responseHeaders?: Record<string, string>;
}

/** What an attempt sends through: an HTTPS POST, or a publish to a destination's broker (destinations/senders.ts). */
export interface RequestSender {
  post(endpoint: string, url: URL, headers: Record<string, string>, body: string): Promise<SendResult>;
  close(): Promise<void>;
}

const RESPONSE_HEADERS_KEPT = 50;

function keptHeaders(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  let n = 0;
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined || n++ >= RESPONSE_HEADERS_KEPT) continue;
    const text = Array.isArray(value) ? value.join(', ') : value;
    out[name.toLowerCase()] = text.length > 256 ? `${text.slice(0, 255)}…` : text;
  }
  return out;
}

export interface SenderOptions {
  timeoutMs: number;
  allowPrivateNetworks: boolean;
  /**
   * Sockets per endpoint (subscription): its own pool, as large as its in-flight limit, so its
   * requests never queue behind another endpoint's — not even one on the same origin.
   */
  connectionsPerEndpoint?: number;
  /** Extra TLS settings (tests trust their own CA here; production uses NODE_EXTRA_CA_CERTS). */
  tls?: ConnectionOptions;
  /** How subscriber host names are resolved (the SSRF guard judges what this returns). */
  lookup?: HostLookup;
}

const MAX_ERROR = 200;
/** Every request's User-Agent. */
export const USER_AGENT = `walgate/${VERSION}`;
/** An IPv4 or IPv6 address (with its port) in an error message. */
const ADDRESS = /\[?(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7})\]?(?::\d+)?/gi;
/** An endpoint's pool closes after this long unused. */
const POOL_IDLE_MS = 60_000;
const RESPONSE_BODY_LIMIT = 64 * 1024;
/** What the delivery log keeps of an answer. */
export const RESPONSE_BODY_KEPT = 1024;

/**
 * POSTs bodies through keep-alive connection pools (undici), one per endpoint: a subscription's
 * stuck requests hold only its own sockets. Redirects are not followed: a 3xx is an answer, and not
 * a 2xx, so the attempt failed. The time-out counts from the moment the request is written on its
 * connection (connecting has its own time-out of the same length); a request never waits for a
 * socket, since an endpoint never has more requests in flight than its pool has sockets.
 */
export class Sender implements RequestSender {
  readonly #pools = new Map<string, { origin: string; pool: Pool; usedAt: number }>();
  readonly #options: SenderOptions;
  readonly #timeoutMs: number;
  readonly #userAgent = USER_AGENT;
  readonly #sweeper: NodeJS.Timeout;

  constructor(options: SenderOptions) {
    this.#options = options;
    this.#timeoutMs = options.timeoutMs;
    // An endpoint unused for a while gives its sockets back (and a deleted one its pool).
    this.#sweeper = setInterval(() => this.#closeIdle(), POOL_IDLE_MS / 2);
    this.#sweeper.unref();
  }

  /** The endpoint's pool, new when its origin changed. */
  #pool(key: string, url: URL): Pool {
    const found = this.#pools.get(key);
    if (found && found.origin === url.origin) {
      found.usedAt = Date.now();
      return found.pool;
    }
    if (found) void found.pool.close().catch(() => undefined);
    const o = this.#options;
    const pool = new Pool(url.origin, {
      connect: guardedConnector({
        ...{ allowPrivate: o.allowPrivateNetworks, tls: o.tls, timeoutMs: o.timeoutMs, lookup: o.lookup },
        setting: 'WEBHOOK_ALLOW_PRIVATE_NETWORKS',
      }),
      connections: o.connectionsPerEndpoint ?? 16,
      keepAliveTimeout: 30_000,
      headersTimeout: o.timeoutMs,
      bodyTimeout: o.timeoutMs,
    });
    this.#pools.set(key, { origin: url.origin, pool, usedAt: Date.now() });
    return pool;
  }

  #closeIdle(): void {
    const before = Date.now() - POOL_IDLE_MS;
    for (const [key, p] of this.#pools) {
      if (p.usedAt > before || p.pool.stats.running > 0 || p.pool.stats.pending > 0) continue;
      this.#pools.delete(key);
      void p.pool.close().catch(() => undefined);
    }
  }

  /**
   * One POST, straight on undici's dispatcher: no response stream, no AbortSignal, no promise per
   * chunk (they were a fifth of the tailer's CPU per delivery). One timer bounds the attempt from
   * its send (a guard twice as long covers connecting); when it fires the attempt is over at once,
   * and the request is aborted as soon as it has a socket. `endpoint` names the pool.
   */
  post(endpoint: string, url: URL, headers: Record<string, string>, body: string): Promise<SendResult> {
    const pool = this.#pool(endpoint, url);
    return new Promise<SendResult>((resolve) => {
      let started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      const kept: Buffer[] = [];
      let keptBytes = 0;
      let seen = 0;
      let status: number | null = null;
      let retryAfter: string | undefined;
      let responseHeaders: Record<string, string> | undefined;
      let controller: Dispatcher.DispatchController | null = null;
      let done = false;
      const finish = (result: SendResult) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve(result);
      };
      const answered = () => {
        const ok = status! >= 200 && status! < 300;
        // Postgres text cannot hold NUL; a multi-byte character cut at the KiB decodes as U+FFFD.
        const responseBody = (kept.length === 1 ? kept[0]! : Buffer.concat(kept)).toString('utf8').replaceAll('\u0000', '\uFFFD');
        finish({
          status,
          ok,
          error: ok ? null : `HTTP ${status}`,
          durationMs: elapsed(),
          responseBody,
          ...(responseHeaders === undefined ? {} : { responseHeaders }),
          ...(retryAfter === undefined ? {} : { retryAfter }),
        });
      };
      const expire = () => {
        const err = Object.assign(new Error(`no answer within ${this.#timeoutMs} ms`), { name: 'TimeoutError' });
        controller?.abort(err);
        finish({ status: null, ok: false, error: describe(err, this.#timeoutMs), durationMs: elapsed(), responseBody: null });
      };
      let timer = setTimeout(expire, this.#timeoutMs * 2 + 1000);
      pool.dispatch(
        {
          path: `${url.pathname}${url.search}`,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': this.#userAgent, ...headers },
          body,
        },
        {
          onRequestStart: (c) => {
            controller = c;
            if (done) return c.abort(new Error('attempt over'));
            // Sent now: the receiver's time starts here, not while connecting or queued.
            clearTimeout(timer);
            started = performance.now();
            timer = setTimeout(expire, this.#timeoutMs);
          },
          onResponseStart: (c, statusCode, resHeaders) => {
            status = statusCode;
            responseHeaders = keptHeaders(resHeaders as Record<string, string | string[] | undefined>);
            const ra = resHeaders['retry-after'];
            if (ra !== undefined) retryAfter = Array.isArray(ra) ? ra[0] : ra;
          },
          onResponseData: (c, chunk) => {
            seen += chunk.length;
            if (keptBytes < RESPONSE_BODY_KEPT) {
              const part = chunk.subarray(0, RESPONSE_BODY_KEPT - keptBytes);
              kept.push(part);
              keptBytes += part.length;
            }
            // A longer answer is cut off: its status stands, the connection is closed, not reused.
            if (seen > RESPONSE_BODY_LIMIT) {
              answered();
              c.abort(new Error('answer too long'));
            }
          },
          onResponseEnd: () => answered(),
          onResponseError: (_c, err) => {
            // An answer that breaks off mid-body: its status stands, and what arrived is kept.
            if (status !== null) answered();
            else finish({ status: null, ok: false, error: describe(err, this.#timeoutMs), durationMs: elapsed(), responseBody: null });
          },
        },
      );
    });
  }

  async close(): Promise<void> {
    clearInterval(this.#sweeper);
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    // Destroyed, not closed: closing waits for requests still hanging on a receiver (the worker has
    // already waited for what it holds, within its bound).
    await Promise.all(pools.map((p) => p.pool.destroy().catch(() => undefined)));
  }
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
    // Node's messages name the address connected to ("connect ECONNREFUSED 10.0.0.7:443"): what a
    // host name resolves to inside our network is not the tenant's to see.
    text = `${code ? `${code}: ` : ''}${(e.message ?? String(err)).replace(ADDRESS, '[address]')}`;
  }
  return text.length > MAX_ERROR ? `${text.slice(0, MAX_ERROR - 1)}…` : text;
}
