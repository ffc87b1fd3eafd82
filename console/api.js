// The management API, as the signed-in person. The token lives in this tab's sessionStorage only:
// never in a URL (it goes in the Authorization header), never in the page's markup.

const KEY = 'walgate.console.session';

export function currentSession() {
  try {
    const s = JSON.parse(sessionStorage.getItem(KEY) ?? 'null');
    return s && typeof s.token === 'string' ? s : null;
  } catch {
    return null;
  }
}

export function saveSession(session) {
  sessionStorage.setItem(KEY, JSON.stringify(session));
}

export function clearSession() {
  sessionStorage.removeItem(KEY);
}

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.error ?? 'ERROR';
    this.violations = body?.violations ?? [];
    /** The whole error body: some errors carry more (DESTINATION_IN_USE: `subscriptions`). */
    this.details = body ?? {};
  }
}

/** Calls /api/rest/_webhooks<path>; resolves with the JSON answer (null for 204), rejects with ApiError. */
export function call(method, path, body, session = currentSession()) {
  return callApi(method, `/api/rest/_webhooks${path}`, body, session);
}

/** Calls any path of the management API (/api/rest/_webhooks…, /api/rest/_gaps…) with the session's token and headers. */
export async function callApi(method, url, body, session = currentSession()) {
  if (!session) throw new ApiError(401, { error: 'AUTH_TOKEN_INVALID', message: 'Not signed in.' });
  const headers = { authorization: `Bearer ${session.token}`, 'x-project-id': session.projectId, environment: session.environment };
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res;
  try {
    res = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
    });
  } catch {
    throw new ApiError(0, { error: 'NETWORK', message: 'walgate did not answer; check the connection.' });
  }
  if (res.status === 204) return null;
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

export const enc = encodeURIComponent;
