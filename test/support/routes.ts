import type express from 'express';

export interface RegisteredRoute {
  /** Lower-case method, or `*` for a handler of every method (`router.all`). */
  method: string;
  /** The full Express path pattern (`/api/rest/_webhooks/:id`). */
  path: string;
}

interface Listing {
  path: string | RegExp;
  methods: string[] | undefined;
  router: { listRoutes(): Listing[] } | undefined;
}

function join(prefix: string, path: string): string {
  if (path === '/') return prefix || '/';
  return `${prefix === '/' ? '' : prefix}${path}`;
}

/** Every method and path an Express app answers on, from the router's own listing (router ≥ 2.3). */
export function registeredRoutes(app: express.Express): RegisteredRoute[] {
  const root = (app as unknown as { router: { listRoutes?: () => Listing[] } }).router;
  if (typeof root.listRoutes !== 'function') throw new Error('router.listRoutes() is missing: the router package is older than 2.3');
  const out: RegisteredRoute[] = [];
  const walk = (listing: Listing[], prefix: string) => {
    for (const entry of listing) {
      if (typeof entry.path !== 'string') throw new Error(`a RegExp route (${String(entry.path)}) cannot be checked against the document`);
      const path = join(prefix, entry.path);
      if (entry.router) walk(entry.router.listRoutes(), path);
      // HEAD comes with every GET; it is not an operation of its own.
      for (const method of entry.methods ?? []) if (method.toLowerCase() !== 'head') out.push({ method: method.toLowerCase(), path });
    }
  };
  walk(root.listRoutes(), '');
  return out;
}
