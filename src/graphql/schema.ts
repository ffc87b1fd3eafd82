import { buildSchema, type GraphQLSchema } from 'graphql';

// The GraphQL twin of the /auth API: the same operations, inputs and answers as the REST bodies
// (docs/graphql.md shows this text; a test keeps the two equal).
export const SDL = `type Query {
  "The user and session of the access token in the Authorization header."
  me: Me!
  "The environment's public signing keys."
  jwks: Jwks!
}

type Mutation {
  signup(input: SignupInput!): SignupResult!
  confirmSignup(input: ConfirmSignupInput!): ConfirmSignupResult!
  login(input: LoginInput!): TokenPair!
  recoverPassword(input: RecoverPasswordInput!): Message!
  resetPassword(input: ResetPasswordInput!): Message!
  refreshToken(input: RefreshTokenInput!): TokenPair!
  "Revokes the session of the access token in the Authorization header."
  logout: Message!
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

type ConfirmSignupResult {
  accessToken: String!
  refreshToken: String!
  tokenType: String!
  expiresIn: Int!
  user: User!
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
  return buildSchema(SDL);
}
