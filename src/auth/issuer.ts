// walgate as an OpenID issuer for resource servers. Each environment has keys of its own, so each
// is an issuer of its own: `{PUBLIC_URL}/auth/issuers/{projectId}/{environment}`, whose discovery
// document (`{iss}/.well-known/openid-configuration`) names the environment's key set. A resource
// server given only a token reads `iss`, discovers, and verifies with any standard library.
// Tokens issued before (iss = PUBLIC_URL) stay valid until they expire: verification accepts both.

export function issuerOf(publicUrl: string, env: { projectId: string; name: string }): string {
  return `${publicUrl}/auth/issuers/${encodeURIComponent(env.projectId)}/${encodeURIComponent(env.name)}`;
}

/** Every issuer a token of this environment may name: its own, and the one tokens carried before. */
export function acceptedIssuers(publicUrl: string, env: { projectId: string; name: string }): string[] {
  return [issuerOf(publicUrl, env), publicUrl];
}

/** The discovery document (OpenID Connect Discovery 1.0 §3, RFC 8414) of an environment's issuer. */
export function discoveryDocument(publicUrl: string, env: { projectId: string; name: string; signingAlg: string }) {
  const jwks = new URL(`${publicUrl}/auth/.well-known/jwks.json`);
  jwks.searchParams.set('projectId', env.projectId);
  jwks.searchParams.set('environment', env.name);
  return {
    issuer: issuerOf(publicUrl, env),
    jwks_uri: jwks.href,
    // Every algorithm the environment may sign with, the current one first: a rotation to another
    // algorithm (`--set signingAlg=…`) publishes keys of both until the old tokens expire.
    id_token_signing_alg_values_supported: [env.signingAlg, ...['ES256', 'RS256', 'EdDSA'].filter((a) => a !== env.signingAlg)],
    subject_types_supported: ['public'],
    claims_supported: ['iss', 'sub', 'aud', 'exp', 'iat', 'nbf', 'jti', 'sid', 'env', 'email', 'amr', 'aal', 'app_metadata'],
  };
}
