import { expect } from 'chai';
import { assuranceLevel } from '../../src/auth/assurance.js';

describe('assurance level from the methods used', () => {
  it('a password alone, or an identity provider alone, is aal1', () => {
    expect(assuranceLevel(['pwd'])).to.equal('aal1');
    expect(assuranceLevel(['fed'])).to.equal('aal1');
    expect(assuranceLevel([])).to.equal('aal1');
  });
  it('a password and a second factor is aal2', () => {
    expect(assuranceLevel(['pwd', 'otp'])).to.equal('aal2');
    expect(assuranceLevel(['pwd', 'recovery'])).to.equal('aal2');
    expect(assuranceLevel(['fed', 'otp'])).to.equal('aal2');
  });
  it('a passkey alone is aal2', () => {
    expect(assuranceLevel(['webauthn'])).to.equal('aal2');
  });
  it('an e-mailed code (otp then email) or a magic link (email) is a first factor; a second factor after it is aal2', () => {
    expect(assuranceLevel(['otp', 'email'])).to.equal('aal1');
    expect(assuranceLevel(['email'])).to.equal('aal1');
    expect(assuranceLevel(['otp', 'email', 'otp'])).to.equal('aal2');
    expect(assuranceLevel(['otp', 'email', 'recovery'])).to.equal('aal2');
    expect(assuranceLevel(['email', 'otp'])).to.equal('aal2');
  });
  it('the same method twice is not two factors', () => {
    expect(assuranceLevel(['pwd', 'pwd'])).to.equal('aal1');
    expect(assuranceLevel(['otp', 'otp'])).to.equal('aal1');
  });
});
