// Tenants share a tailer's in-flight budget fairly: while several projects have work, none may hold
// more than budget / (projects with work). A project alone may use all of it. Nothing is taken back
// from a project already above its share (its requests finish or time out); it just starts no more
// until it is below. The stream and the retry queue's worker each apply it to their own budget.

/** Adds `by` to a count, dropping it at zero. */
export function count(counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by;
  if (n <= 0) counts.delete(key);
  else counts.set(key, n);
}

/** The fair share of `budget`: the projects with work are those with requests in flight (`active`) and those waiting. */
export function fairShare(budget: number, active: ReadonlyMap<string, number>, waiting: Iterable<string>): number {
  const tenants = new Set(active.keys());
  for (const t of waiting) tenants.add(t);
  return Math.max(1, Math.ceil(budget / Math.max(1, tenants.size)));
}

/** The tenants of these lanes (those with deliveries waiting). */
export function* tenantsOf(ids: Iterable<string>, lanes: ReadonlyMap<string, { tenant: string }>): Iterable<string> {
  for (const id of ids) {
    const lane = lanes.get(id);
    if (lane) yield lane.tenant;
  }
}
