-- The publication the tailer streams. It starts with walgate.webhooks (so subscription changes
-- arrive in WAL order with the data changes); watched tables are added when a subscription
-- names them (src/tailer/publication.ts).
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = 'walgate') THEN
    CREATE PUBLICATION walgate FOR TABLE walgate.webhooks;
  END IF;
END
$$;
