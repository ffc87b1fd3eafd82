// What a refresh token is worth when it is presented: the one rule of refresh, kept pure so that
// its edges (the grace window, ended sessions, both lifetimes) are tested without a database.

/** What the store knows of a presented refresh token and its session. */
export interface PresentedToken {
  usedAt: Date | null;
  /** When the token's successor (the one its first exchange issued) was itself used; null: not yet. */
  successorUsedAt?: Date | null;
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
  /** Issue the pair of the same session (first use; or, within the grace, again with the same successor). */
  | { kind: 'exchange' }
  /** A used token presented after the grace, or after its successor was used, while its session lives: the family leaked. */
  | { kind: 'reuse' }
  /** Simply invalid: no revocation, no leak alert. */
  | { kind: 'invalid'; reason: 'unknown' | 'expired' | 'session_ended' };

/**
 * A token presented again within `graceSeconds` of its first use is exchanged again — for the
 * same successor refresh token as its first exchange, so the session keeps one chain: two tabs
 * waking up together, or a client retrying a request whose answer it lost, each get a working
 * pair. After the grace, or once that successor has itself been used (the chain moved on), reuse
 * of a live session's token means someone else holds it (Supabase's refresh-token reuse
 * interval, `internal/tokens/service.go`, makes the same distinction). A token of
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
  if (token.usedAt) {
    if (token.successorUsedAt) return { kind: 'reuse' };
    return t - token.usedAt.getTime() <= graceSeconds * 1000 ? { kind: 'exchange' } : { kind: 'reuse' };
  }
  return token.expiresAt.getTime() <= t ? { kind: 'invalid', reason: 'expired' } : { kind: 'exchange' };
}
