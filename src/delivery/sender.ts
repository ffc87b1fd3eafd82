import type { ConnectionOptions } from 'node:tls';
import { Agent, type Dispatcher } from 'undici';
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
  /** The answer's headers (at most RESPONSE_HEADERS_KEPT, values cut at 256 characters); absent without an answer. */
  responseHeaders?: Record<string, string>;
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
  /** Sockets per subscriber origin: one slow endpoint cannot take them all. */
  connectionsPerOrigin?: number;
  /** Extra TLS settings (tests trust their own CA here; production uses NODE_EXTRA_CA_CERTS). */
  tls?: ConnectionOptions;
  /** How subscriber host names are resolved (the SSRF guard judges what this returns). */
  lookup?: HostLookup;
}

const MAX_ERROR = 200;
/** Every request's User-Agent. */
export const USER_AGENT = `walgate/${VERSION}`;
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
  readonly #userAgent = USER_AGENT;

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

  /**
   * One POST, straight on undici's dispatcher: no response stream, no AbortSignal, no promise per
   * chunk (they were a fifth of the tailer's CPU per delivery). One timer bounds the attempt; when
   * it fires the attempt is over at once, and the request is aborted as soon as it has a socket.
   */
  post(url: URL, headers: Record<string, string>, body: string): Promise<SendResult> {
    return new Promise<SendResult>((resolve) => {
      const started = performance.now();
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
      const timer = setTimeout(() => {
        const err = Object.assign(new Error(`no answer within ${this.#timeoutMs} ms`), { name: 'TimeoutError' });
        controller?.abort(err);
        finish({ status: null, ok: false, error: describe(err, this.#timeoutMs), durationMs: elapsed(), responseBody: null });
      }, this.#timeoutMs);
      this.#agent.dispatch(
        {
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': this.#userAgent, ...headers },
          body,
        },
        {
          onRequestStart: (c) => {
            controller = c;
            if (done) c.abort(new Error('attempt over'));
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
    await this.#agent.close();
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
    text = `${code ? `${code}: ` : ''}${e.message ?? String(err)}`;
  }
  return text.length > MAX_ERROR ? `${text.slice(0, MAX_ERROR - 1)}…` : text;
}
