-- Capture that follows schema changes.
--
-- The publication publishes partitions through their root (events name the table a subscription
-- names) and, on Postgres 18+, stored generated columns (without them in the publication a table
-- at REPLICA IDENTITY FULL refuses the application's UPDATE and DELETE).
ALTER PUBLICATION walgate SET (publish_via_partition_root = true);
DO $$
BEGIN
  IF current_setting('server_version_num')::int >= 180000 THEN
    EXECUTE 'ALTER PUBLICATION walgate SET (publish_generated_columns = stored)';
  END IF;
END
$$;

-- Makes a watched table (or a partition of one) ready for capture: every partition at REPLICA
-- IDENTITY FULL, the root in the publication. Tables with virtual generated columns keep their
-- identity: FULL would make Postgres refuse their UPDATE and DELETE (the subscription reports it).
-- Idempotent: it changes only what is not yet as needed, so the ALTERs it runs itself (which fire
-- the event trigger again) find nothing to do.
CREATE FUNCTION walgate.prepare_watched_table(rel regclass) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
  root oid := coalesce(pg_partition_root(rel), rel);
  part record;
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM walgate.webhooks w JOIN pg_class c ON c.oid = root JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE w.schema_name = n.nspname AND w.table_name = c.relname) THEN
    RETURN;
  END IF;
  -- pg_partition_tree lists nothing for a table that is not partitioned: the root is added.
  FOR part IN
    SELECT t.relid FROM (SELECT root AS relid UNION SELECT relid FROM pg_partition_tree(root)) t JOIN pg_class c ON c.oid = t.relid
     WHERE c.relkind IN ('r', 'p') AND c.relreplident <> 'f'
       AND NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = t.relid AND a.attgenerated = 'v' AND NOT a.attisdropped)
  LOOP
    EXECUTE format('ALTER TABLE %s REPLICA IDENTITY FULL', part.relid::regclass);
  END LOOP;
  IF NOT EXISTS (SELECT 1 FROM pg_publication_rel WHERE prpubid = (SELECT oid FROM pg_publication WHERE pubname = 'walgate') AND prrelid = root) THEN
    EXECUTE format('ALTER PUBLICATION walgate ADD TABLE %s', root::regclass);
  END IF;
END
$$;

-- Follows DDL on watched tables in the transaction that makes it, so no change in between is
-- missed: a table created again under a watched name joins the publication at its creation, a new
-- partition gets the identity it needs, a replica identity switched away from FULL is set back.
CREATE FUNCTION walgate.follow_watched_tables() RETURNS event_trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
DECLARE
  cmd record;
BEGIN
  FOR cmd IN
    SELECT DISTINCT d.objid FROM pg_event_trigger_ddl_commands() d JOIN pg_class c ON c.oid = d.objid
     WHERE d.object_type IN ('table', 'table column') AND c.relkind IN ('r', 'p')
  LOOP
    PERFORM walgate.prepare_watched_table(cmd.objid::regclass);
  END LOOP;
END
$$;

-- Event triggers need a superuser. Without one, walgate still reports what it cannot follow
-- (a subscription's `problems`), and re-subscribing repairs it.
DO $$
BEGIN
  IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
    CREATE EVENT TRIGGER walgate_follow_watched_tables ON ddl_command_end
      WHEN TAG IN ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO', 'ALTER TABLE')
      EXECUTE FUNCTION walgate.follow_watched_tables();
  END IF;
END
$$;
