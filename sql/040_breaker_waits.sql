-- The breaker pauses; it never spends attempts (the seed: "deliveries to that endpoint pause for
-- 2 minutes, then resume"). A slot that comes due while the breaker holds it is a wait, logged as
-- such, with the delivery's attempt count unchanged.
ALTER TABLE walgate.delivery_attempts ADD COLUMN kind text NOT NULL DEFAULT 'request' CHECK (kind IN ('request', 'wait'));
-- Under the rule before this one a breaker's skip was an attempt row with this error and no answer.
UPDATE walgate.delivery_attempts SET kind = 'wait' WHERE error = 'breaker open' AND http_status IS NULL AND duration_ms = 0;

-- When the delivery's schedule began: its capture, or an operator's retry or replay. A delivery
-- held by an open breaker longer than its schedule's span plus two cool-downs from then is dead
-- (so every delivery ends); NULL means its created_at.
ALTER TABLE walgate.deliveries ADD COLUMN schedule_started_at timestamptz;
