/**
 * A select list that names every column after the field of the typed object it fills
 * (`project_id AS "projectId"`), so a store maps its rows once, here, and `query<T>` returns T.
 */
export function selectList<T>(fields: { [K in keyof T]-?: string }, alias?: string): string {
  const prefix = alias ? `${alias}.` : '';
  return Object.entries(fields as Record<string, string>)
    .map(([field, column]) => (field === column ? `${prefix}${column}` : `${prefix}${column} AS "${field}"`))
    .join(', ');
}
