export interface HttpResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as-is instead of JSON-encoding `body`. */
  raw?: string | Buffer;
  headers?: Record<string, string>;
  /** Abort (and reject) when no answer came within this time: for tests that say "never hangs". */
  timeoutMs?: number;
  /** `manual`: answer a redirect as it is (status and Location) instead of following it. */
  redirect?: 'follow' | 'manual';
}

/** A small HTTP client for tests: JSON in, JSON (or text) out, never throws on a status. */
export class HttpClient {
  constructor(
    readonly baseUrl: string,
    readonly defaultHeaders: Record<string, string> = {},
  ) {}

  with(headers: Record<string, string>): HttpClient {
    return new HttpClient(this.baseUrl, { ...this.defaultHeaders, ...headers });
  }

  async request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<HttpResponse<T>> {
    const headers: Record<string, string> = { ...this.defaultHeaders, ...options.headers };
    let body: string | Buffer | undefined;
    if (options.raw !== undefined) body = options.raw;
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const signal = options.timeoutMs ? AbortSignal.timeout(options.timeoutMs) : undefined;
    const res = await fetch(this.baseUrl + path, { method, headers, body, signal, redirect: options.redirect ?? 'follow' });
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }

  get<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>('GET', path, options);
  }
  post<T = any>(path: string, body?: unknown, options: RequestOptions = {}) {
    return this.request<T>('POST', path, { ...options, body });
  }
  patch<T = any>(path: string, body?: unknown, options: RequestOptions = {}) {
    return this.request<T>('PATCH', path, { ...options, body });
  }
  delete<T = any>(path: string, options?: RequestOptions) {
    return this.request<T>('DELETE', path, options);
  }
}
