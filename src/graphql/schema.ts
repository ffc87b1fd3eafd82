import { buildSchema, type GraphQLSchema } from 'graphql';
import { ORGANIZATIONS_SDL } from './organizations.js';

// The GraphQL twin of the /auth API: the same operations, inputs and answers as the REST bodies
// (docs/graphql.md shows this text; a test keeps the two equal).
export const SDL = `type Query {
  "The user and session of the access token in the Authorization header."
  me: Me!
  "The environment's public signing keys."
  jwks: Jwks!
  "The user's live sessions (access token in the Authorization header)."
  sessions: SessionList!
  "The user's identity-provider identities (access token in the Authorization header)."
  identities: IdentityList!
  "The user's active second factors (access token in the Authorization header)."
  mfaFactors: MfaFactorList!
}

type Mutation {
  signup(input: SignupInput!): SignupResult!
  confirmSignup(input: ConfirmSignupInput!): ConfirmSignupResult!
  login(input: LoginInput!): LoginResult!
  recoverPassword(input: RecoverPasswordInput!): Message!
  resetPassword(input: ResetPasswordInput!): Message!
  refreshToken(input: RefreshTokenInput!): TokenPair!
  resendConfirmation(input: RecoverPasswordInput!): Message!
  "Revokes the session of the access token in the Authorization header (scope local), the others, or all."
  logout(input: LogoutInput): Message!
  "Ends one of the user's own sessions."
  endSession(input: EndSessionInput!): Message!
  "Exchanges the one-time code of a provider sign-in, with its PKCE verifier, for a token pair, or the MFA step for a user with a second factor. (The sign-in itself is a browser redirect: REST only.)"
  providerToken(input: ProviderTokenInput!): LoginResult!
  "Removes one of the user's identities; never the last way to sign in."
  unlinkIdentity(input: UnlinkIdentityInput!): Message!
  "Starts enrolling an authenticator app: the secret is shown this once."
  mfaTotpEnroll(input: MfaTotpEnrollInput): MfaTotpEnrollment!
  "A right code activates the app; the user's first factor comes with recovery codes."
  mfaTotpVerify(input: MfaTotpVerifyInput!): MfaFactorAdded!
  "Finishes a login that answered mfaRequired, with a TOTP code or a recovery code."
  mfaChallenge(input: MfaChallengeInput!): TokenPair!
  "Removes one of the user's factors (needs an aal2 token)."
  mfaDeleteFactor(input: MfaDeleteFactorInput!): Message!
  "A new set of ten recovery codes (needs an aal2 token)."
  mfaRecoveryCodes: RecoveryCodes!
  "Options for navigator.credentials.create(), as JSON text."
  passkeyRegisterOptions: PasskeyOptions!
  "Registers the passkey: response is the browser's answer as JSON text."
  passkeyRegisterVerify(input: PasskeyRegisterVerifyInput!): MfaFactorAdded!
  "Options for navigator.credentials.get(), as JSON text; with an mfaToken, the passkey is the second factor."
  passkeyLoginOptions(input: PasskeyLoginOptionsInput): PasskeyOptions!
  "Signs in with the passkey's assertion (JSON text)."
  passkeyLoginVerify(input: PasskeyLoginVerifyInput!): TokenPair!
  "E-mails a 6-digit sign-in code; the same answer for any address (passwordless sign-in)."
  sendOtp(input: SendOtpInput!): Message!
  "Signs in with the e-mailed code: a token pair, or the MFA step for a user with a second factor."
  verifyOtp(input: VerifyOtpInput!): LoginResult!
  "E-mails a sign-in link to an allowed redirectTo; the same answer for any address."
  sendMagicLink(input: SendMagicLinkInput!): Message!
  "Signs in with the token the link carried: a token pair, or the MFA step."
  verifyMagicLink(input: VerifyMagicLinkInput!): LoginResult!
}

input SendOtpInput {
  email: String!
}

input VerifyOtpInput {
  email: String!
  code: String!
}

input SendMagicLinkInput {
  email: String!
  redirectTo: String!
}

input VerifyMagicLinkInput {
  token: String!
}

input ProviderTokenInput {
  code: String!
  codeVerifier: String!
}

input UnlinkIdentityInput {
  id: ID!
}

type Identity {
  id: ID!
  provider: String!
  subject: String!
  email: String
  createdAt: String!
  lastSignInAt: String!
}

type IdentityList {
  identities: [Identity!]!
}

input MfaTotpEnrollInput {
  name: String
}

input MfaTotpVerifyInput {
  factorId: ID!
  code: String!
}

input MfaChallengeInput {
  mfaToken: String!
  factorId: ID
  code: String!
}

input MfaDeleteFactorInput {
  id: ID!
}

input PasskeyRegisterVerifyInput {
  response: String!
  name: String
}

input PasskeyLoginOptionsInput {
  mfaToken: String
}

input PasskeyLoginVerifyInput {
  response: String!
  mfaToken: String
}

type MfaTotpEnrollment {
  factorId: ID!
  secret: String!
  otpauthUrl: String!
  qrSvg: String!
}

type MfaFactor {
  id: ID!
  type: String!
  name: String
  createdAt: String!
  lastUsedAt: String
}

type MfaFactorRef {
  id: ID!
  type: String!
}

type MfaFactorAdded {
  factor: MfaFactor!
  recoveryCodes: [String!]
}

type MfaFactorList {
  factors: [MfaFactor!]!
  recoveryCodesLeft: Int!
}

type RecoveryCodes {
  recoveryCodes: [String!]!
}

type PasskeyOptions {
  "PublicKeyCredentialCreationOptionsJSON or PublicKeyCredentialRequestOptionsJSON, as JSON text."
  optionsJSON: String!
}

enum LogoutScope {
  local
  others
  global
}

input LogoutInput {
  scope: LogoutScope
}

input EndSessionInput {
  id: ID!
}

input SignupInput {
  email: String!
  password: String!
  name: String
}

input ConfirmSignupInput {
  email: String!
  code: String!
}

input LoginInput {
  email: String!
  password: String!
}

input RecoverPasswordInput {
  email: String!
}

input ResetPasswordInput {
  email: String!
  code: String!
  newPassword: String!
}

input RefreshTokenInput {
  refreshToken: String!
}

type SignupResult {
  userId: ID!
  message: String!
}

type TokenPair {
  accessToken: String!
  refreshToken: String!
  tokenType: String!
  expiresIn: Int!
}

"The token pair, or (for a user with an active second factor) mfaRequired, mfaToken and factors instead; deviceToken with either."
type LoginResult {
  accessToken: String
  refreshToken: String
  tokenType: String
  expiresIn: Int
  deviceToken: String
  mfaRequired: Boolean
  mfaToken: String
  factors: [MfaFactorRef!]
}

"The token pair, deviceToken and user; or (for a user with an active second factor) mfaRequired, mfaToken and factors instead."
type ConfirmSignupResult {
  accessToken: String
  refreshToken: String
  tokenType: String
  expiresIn: Int
  deviceToken: String
  user: User
  mfaRequired: Boolean
  mfaToken: String
  factors: [MfaFactorRef!]
}

type DeviceSession {
  id: ID!
  createdAt: String!
  lastUsedAt: String!
  ip: String
  userAgent: String
  current: Boolean!
  "True for a session an operator started as the user (impersonation); end it like any other."
  impersonated: Boolean!
}

type SessionList {
  sessions: [DeviceSession!]!
}

type User {
  id: ID!
  email: String!
  name: String
  emailVerified: Boolean!
  createdAt: String!
}

type Session {
  id: ID!
  expiresAt: String!
}

type Me {
  user: User!
  session: Session!
}

type Message {
  message: String!
}

"A public JSON Web Key: members by key type (EC: crv, x, y; RSA: n, e; OKP: crv, x)."
type Jwk {
  kty: String!
  kid: String!
  alg: String!
  use: String!
  crv: String
  x: String
  y: String
  n: String
  e: String
}

type Jwks {
  keys: [Jwk!]!
}
`;

export function authSchema(): GraphQLSchema {
  // Organizations extend Query and Mutation from their own file (organizations.ts).
  return buildSchema(SDL + ORGANIZATIONS_SDL);
}
