-- Due deliveries per subscription, oldest first: the worker claims each active subscription's
-- share through this index (src/delivery/store.ts claimDue), so a subscription with a large
-- backlog (a hanging endpoint) cannot hide the others' due deliveries behind its own.
CREATE INDEX deliveries_due_by_webhook ON walgate.deliveries (webhook_id, next_attempt_at) WHERE status IN ('pending', 'retrying');
