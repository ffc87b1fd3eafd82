-- A login's failure reservation (src/auth/lockout.ts) in one round trip instead of four (BEGIN,
-- the upsert that takes both rows' locks, the update, COMMIT). The steps and their order are the
-- same: the function's statements run in one transaction, each with a fresh snapshot, under the
-- row locks the first one takes (account row first, as the clients array lists it). So of N
-- concurrent attempts at most the threshold get to check a password, and exactly one sets a lock.
CREATE FUNCTION walgate.reserve_login_attempt(
  p_account bytea,
  p_clients text[],          -- the account-wide row's client first, then the requesting client
  p_now timestamptz,
  p_thresholds int[],        -- per client, failures that lock it
  p_lockout_seconds int
) RETURNS TABLE (locked_until timestamptz, locked_here timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
  lock_until constant timestamptz := p_now + make_interval(secs => p_lockout_seconds);
  -- Failures older than a lockout period are forgotten: a typo last week counts for nothing.
  idle_since constant timestamptz := p_now - make_interval(secs => p_lockout_seconds);
  existing timestamptz;
  here timestamptz;
BEGIN
  INSERT INTO walgate.login_failures AS f (account, client, failures, updated_at)
  SELECT p_account, c, 0, p_now FROM unnest(p_clients) AS c
  ON CONFLICT (account, client) DO UPDATE SET failures = f.failures;

  SELECT max(f.locked_until) INTO existing FROM walgate.login_failures f
   WHERE f.account = p_account AND f.client = ANY (p_clients) AND f.locked_until > p_now;
  IF existing IS NOT NULL THEN
    RETURN QUERY SELECT existing, NULL::timestamptz; -- refused: nothing counted
    RETURN;
  END IF;

  WITH next AS (
    SELECT f.client, (CASE WHEN f.updated_at <= idle_since THEN 0 ELSE f.failures END) + 1 AS failures, t.threshold
      FROM walgate.login_failures f JOIN unnest(p_clients, p_thresholds) AS t (client, threshold) ON t.client = f.client
     WHERE f.account = p_account
  ), counted AS (
    UPDATE walgate.login_failures f
       SET failures = CASE WHEN n.failures >= n.threshold THEN 0 ELSE n.failures END,
           locked_until = CASE WHEN n.failures >= n.threshold THEN lock_until END,
           updated_at = p_now
      FROM next n WHERE f.account = p_account AND f.client = n.client
    RETURNING f.locked_until
  )
  SELECT max(c.locked_until) INTO here FROM counted c;
  RETURN QUERY SELECT NULL::timestamptz, here;
END
$$;
