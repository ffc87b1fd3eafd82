// What a refresh token is worth when it is presented: the one rule of refresh, kept pure so that
// its edges (the grace window, ended sessions, both lifetimes) are tested without a database.

/** What the store knows of a presented refresh token and its session. */
export interface PresentedToken {
  usedAt: Date | null;
  expiresAt: Date;
  session: {
    revokedAt: Date | null;
    /** The idle end: moved forward by every refresh. */
    expiresAt: Date;
    /** The absolute end: fixed at login. */
    absoluteExpiresAt: Date;
  };
}

export type RefreshDecision =
  /** Issue a new pair of the same session (first use, or a reuse within the grace). */
  | { kind: 'exchange' }
  /** A used token presented after the grace while its session lives: the family leaked. */
  | { kind: 'reuse' }
  /** Simply invalid: no revocation, no leak alert. */
  | { kind: 'invalid'; reason: 'unknown' | 'expired' | 'session_ended' };

/**
 * A token presented again within `graceSeconds` of its first use is exchanged again: two tabs
 * waking up together, or a client retrying a request whose answer it lost, each get a working
 * pair. After the grace, reuse of a live session's token means someone else holds it. A token of
 * an ended session (logout, password reset, expiry) is just invalid: presenting it after a logout
 * is what harmless clients do, and must not raise the leak alert.
 */
export function decideRefresh(token: PresentedToken | undefined, now: Date, graceSeconds: number): RefreshDecision {
  if (!token) return { kind: 'invalid', reason: 'unknown' };
  const t = now.getTime();
  const { session } = token;
  if (session.revokedAt || session.expiresAt.getTime() <= t || session.absoluteExpiresAt.getTime() <= t) {
    return { kind: 'invalid', reason: 'session_ended' };
  }
  // A used token of a live session is judged by its use, expired or not: presented after the
  // grace it leaked, however old it is.
  if (token.usedAt) return t - token.usedAt.getTime() <= graceSeconds * 1000 ? { kind: 'exchange' } : { kind: 'reuse' };
  return token.expiresAt.getTime() <= t ? { kind: 'invalid', reason: 'expired' } : { kind: 'exchange' };
}
