// Identifiers (schema, table, column names) cannot be bound as parameters, so they are checked
// here before they meet SQL text, and always quoted.

const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]{0,62}$/;

/** Names we create or accept from users: ASCII letters, digits, `_` and `$`, at most 63 bytes. */
export function isPlainIdentifier(name: string): boolean {
  return PLAIN_IDENTIFIER.test(name);
}

/** Double-quotes an identifier for SQL text; embedded quotes are doubled, NUL is refused. */
export function quoteIdent(name: string): string {
  if (name.length === 0 || name.includes('\0')) throw new Error(`not an identifier: ${JSON.stringify(name)}`);
  return `"${name.replaceAll('"', '""')}"`;
}

/** `"schema"."table"` */
export function qualified(schema: string, table: string): string {
  return `${quoteIdent(schema)}.${quoteIdent(table)}`;
}

/**
 * The default Postgres schema for a project environment: `<projectId>_<environment>`, lower-cased,
 * anything outside [a-z0-9_] replaced by `_`.
 */
export function defaultSchemaName(projectId: string, environment: string): string {
  return `${projectId}_${environment}`
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .slice(0, 63);
}
