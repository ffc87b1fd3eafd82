-- A row-ordered delivery names its row's change handed to the subscription before it
-- (`previous_event_id` in the body, src/tailer/previous-events.ts), so that a receiver can tell a
-- gap. Kept on the row: a retry or a replay renders the body the first attempt sent. Null: not
-- known (after a restart), or an unordered delivery. A nullable column without a default: adding
-- it rewrites nothing.
ALTER TABLE walgate.deliveries ADD COLUMN IF NOT EXISTS previous_event_id text;
