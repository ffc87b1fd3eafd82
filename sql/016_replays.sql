-- Replays of dead letters as background jobs: a large one outlives the request that asked for it
-- (`202 {replay}`, then `GET …/replays/{id}`). A job runs in the api process that accepted it,
-- holding a lease it renews; one whose lease ran out (its process died) is taken up by another.
CREATE TABLE walgate.replays (
  id            text PRIMARY KEY,
  webhook_id    text NOT NULL REFERENCES walgate.webhooks (id) ON DELETE CASCADE,
  since         timestamptz,
  until         timestamptz,
  state         text NOT NULL CHECK (state IN ('running', 'done', 'failed')),
  -- Dead letters in the range when it was asked for; replayed: made pending so far.
  count         integer NOT NULL,
  replayed      integer NOT NULL DEFAULT 0,
  lease_until   timestamptz,
  created_at    timestamptz NOT NULL,
  finished_at   timestamptz
);
CREATE INDEX replays_running ON walgate.replays (lease_until) WHERE state = 'running';
CREATE INDEX replays_finished ON walgate.replays (finished_at) WHERE state <> 'running';
