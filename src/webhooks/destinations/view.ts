import type { DestinationKind } from '../../delivery/destinations/address.js';
import type { DestinationRow } from './store.js';

/** A destination as the API shows it: which credentials are set, never their values. */
export interface DestinationView {
  id: string;
  name: string;
  kind: DestinationKind;
  url: string;
  credentials: { username: boolean; password: boolean; token: boolean };
  createdAt: string;
  updatedAt: string;
}

export function destinationView(d: DestinationRow): DestinationView {
  const set = new Set(d.credentialNames);
  return {
    id: d.id,
    name: d.name,
    kind: d.kind,
    url: d.url,
    credentials: { username: set.has('username'), password: set.has('password'), token: set.has('token') },
    createdAt: d.createdAt.toISOString(),
    updatedAt: d.updatedAt.toISOString(),
  };
}
