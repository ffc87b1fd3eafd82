-- One data schema belongs to one environment: two environments on one schema would let each
-- project's management token subscribe to the other's tables, and map the other's changes to
-- itself. Compared as Postgres folds unquoted names (lower case), so `Acme` and `acme` collide too.
-- A database where environments already share a schema stops here, naming them: the operator
-- decides which one keeps it (see README, "Projects and environments").
DO $$
DECLARE
  shared text;
BEGIN
  SELECT string_agg(format('%s: %s', s, owners), '; ') INTO shared
  FROM (
    SELECT lower(schema_name) AS s, string_agg(project_id || '/' || name, ', ' ORDER BY project_id, name) AS owners
    FROM walgate.environments GROUP BY lower(schema_name) HAVING count(*) > 1
  ) x;
  IF shared IS NOT NULL THEN
    RAISE EXCEPTION 'environments share a data schema (%): one schema belongs to one environment; '
      'move the tables of all but one into schemas of their own, set walgate.environments.schema_name to match, and start again', shared;
  END IF;
END $$;

CREATE UNIQUE INDEX environments_schema_name_key ON walgate.environments (lower(schema_name));
