import { expect } from 'chai';
import { isReservedClaim, reservedKeys } from '../../../src/auth/claims/reserved.js';
import { parseFunctionName } from '../../../src/auth/claims/name.js';

// What a claims function may never set, and how its name is read (docs/claims.md).

describe('claims: reserved names and function names', () => {
  it('walgate’s own claims, every org_ claim and act are reserved; anything else is the app’s', () => {
    for (const name of ['iss', 'sub', 'aud', 'exp', 'iat', 'nbf', 'jti', 'sid', 'env', 'aal', 'amr', 'act', 'org_id', 'org_role', 'org_x'])
      expect(isReservedClaim(name), name).to.equal(true);
    for (const name of ['plan', 'permissions', 'email', 'app_metadata', 'org', 'organization', 'Sub', 'actor'])
      expect(isReservedClaim(name), name).to.equal(false);
    expect(reservedKeys({ plan: 1, sub: 'x', org_id: 'y' })).to.deep.equal(['sub', 'org_id']);
  });

  it('a function name is schema.function of plain identifiers, nothing else', () => {
    expect(parseFunctionName('app_master.token_claims')).to.deep.equal({ schema: 'app_master', name: 'token_claims' });
    for (const bad of ['token_claims', 'a.b.c', 'a."b"', 'a.b()', 'a.b; drop', '.b', 'a.', '1a.b', `a.${'x'.repeat(64)}`])
      expect(parseFunctionName(bad), bad).to.equal(undefined);
  });
});
