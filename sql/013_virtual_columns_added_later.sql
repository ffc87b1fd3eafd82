-- A virtual generated column added to a table that is already watched (on Postgres 18 a generated
-- column is virtual unless STORED is written): Postgres cannot publish it, and with the table at
-- REPLICA IDENTITY FULL it would refuse the application's UPDATE and DELETE. The application's
-- writes come first: such a table falls back to its primary key as replica identity, or, without
-- one, leaves the publication. Either way the subscription reports it (`problems`:
-- REPLICA_IDENTITY_CHANGED or TABLE_MISSING) instead of breaking the application.
CREATE OR REPLACE FUNCTION walgate.prepare_watched_table(rel regclass) RETURNS void
  LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
  root oid := coalesce(pg_partition_root(rel), rel);
  part record;
  unpublishable boolean := false;
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM walgate.webhooks w JOIN pg_class c ON c.oid = root JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE w.schema_name = n.nspname AND w.table_name = c.relname) THEN
    RETURN;
  END IF;
  -- pg_partition_tree lists nothing for a table that is not partitioned: the root is added.
  FOR part IN
    SELECT t.relid, c.relreplident,
           EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = t.relid AND a.attgenerated = 'v' AND NOT a.attisdropped) AS virtual,
           EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = t.relid AND i.indisprimary) AS keyed
      FROM (SELECT root AS relid UNION SELECT relid FROM pg_partition_tree(root)) t JOIN pg_class c ON c.oid = t.relid
     WHERE c.relkind IN ('r', 'p')
  LOOP
    IF NOT part.virtual AND part.relreplident <> 'f' THEN
      EXECUTE format('ALTER TABLE %s REPLICA IDENTITY FULL', part.relid::regclass);
    ELSIF part.virtual AND part.relreplident = 'f' AND part.keyed THEN
      EXECUTE format('ALTER TABLE %s REPLICA IDENTITY DEFAULT', part.relid::regclass);
    ELSIF part.virtual AND NOT part.keyed THEN
      unpublishable := true;
    END IF;
  END LOOP;
  IF unpublishable THEN
    IF EXISTS (SELECT 1 FROM pg_publication_rel WHERE prpubid = (SELECT oid FROM pg_publication WHERE pubname = 'walgate') AND prrelid = root) THEN
      EXECUTE format('ALTER PUBLICATION walgate DROP TABLE %s', root::regclass);
    END IF;
  ELSIF NOT EXISTS (SELECT 1 FROM pg_publication_rel WHERE prpubid = (SELECT oid FROM pg_publication WHERE pubname = 'walgate') AND prrelid = root) THEN
    EXECUTE format('ALTER PUBLICATION walgate ADD TABLE %s', root::regclass);
  END IF;
END
$$;
