import type { OrganizationService } from '../auth/organizations/service.js';
import type { Environment } from '../projects/environments.js';
import { organizationsApi } from '../http/auth/organizations/operations.js';
import { parse } from '../http/validate.js';
import type { GraphQLContext } from './resolvers.js';

// The GraphQL twins of /auth/organizations: each parses its input with the REST operation's own
// schemas and calls the same OrganizationService method, so the rules and errors are the REST ones.
// The fields extend the schema's Query and Mutation (schema.ts joins the two texts).

export const ORGANIZATIONS_SDL = `
extend type Query {
  "Your organizations, with your role in each (access token in the Authorization header)."
  organizations: OrganizationList!
  "One of your organizations, its members, and (for owners and admins) its open invitations."
  organization(id: ID!): OrganizationDetail!
}

extend type Mutation {
  "Creates an organization; you are its owner."
  createOrganization(input: CreateOrganizationInput!): OrganizationResult!
  "Renames one of your organizations (owners and admins)."
  renameOrganization(input: RenameOrganizationInput!): OrganizationResult!
  "Deletes one of your organizations (owners)."
  deleteOrganization(input: OrganizationIdInput!): Message!
  "E-mails an invitation whose link carries the token as invitation=."
  inviteMember(input: InviteMemberInput!): InvitationResult!
  "Revokes an open invitation."
  revokeInvitation(input: RevokeInvitationInput!): InvitationResult!
  "Accepts an invitation sent to your address, once."
  acceptInvitation(input: AcceptInvitationInput!): OrganizationResult!
  "Changes a member's role; shows in their tokens at the next refresh."
  changeMemberRole(input: ChangeMemberRoleInput!): MemberResult!
  "Removes a member, or leaves (your own user id); never the last owner."
  removeMember(input: RemoveMemberInput!): Message!
  "A new token pair of this session acting for the organization (null: none): org_id, org_role, org_permissions."
  switchOrganization(input: SwitchOrganizationInput!): TokenPair!
}

type Organization {
  id: ID!
  name: String!
  role: String
  createdAt: String!
  updatedAt: String!
}

type OrganizationList {
  organizations: [Organization!]!
}

type OrganizationMember {
  userId: ID!
  email: String!
  role: String!
  joinedAt: String!
}

type Invitation {
  id: ID!
  organizationId: ID!
  email: String!
  role: String!
  status: String!
  createdAt: String!
  expiresAt: String!
}

type OrganizationDetail {
  organization: Organization!
  members: [OrganizationMember!]!
  invitations: [Invitation!]!
}

type OrganizationResult {
  organization: Organization!
}

type InvitationResult {
  invitation: Invitation!
}

type MemberResult {
  member: OrganizationMember!
}

input CreateOrganizationInput {
  name: String!
}

input RenameOrganizationInput {
  organizationId: ID!
  name: String!
}

input OrganizationIdInput {
  organizationId: ID!
}

input InviteMemberInput {
  organizationId: ID!
  email: String!
  role: String!
}

input RevokeInvitationInput {
  organizationId: ID!
  invitationId: ID!
}

input AcceptInvitationInput {
  token: String!
}

input ChangeMemberRoleInput {
  organizationId: ID!
  userId: ID!
  role: String!
}

input RemoveMemberInput {
  organizationId: ID!
  userId: ID!
}

input SwitchOrganizationInput {
  organizationId: ID
}
`;

export const ORGANIZATION_DELETED = 'The organization has been deleted.';
export const MEMBER_REMOVED = 'The member has been removed.';

type Input = { input: Record<string, unknown> };

/** What the root resolvers share with these (resolvers.ts): the environment, one mutation per document, the client. */
export interface ResolverTools {
  env(c: GraphQLContext): Promise<Environment>;
  oneMutation<T>(c: GraphQLContext, run: () => Promise<T>): Promise<T>;
  authorization(c: GraphQLContext): string | undefined;
  client(c: GraphQLContext): { clientAddress?: string | null; userAgent?: string | null };
}

export function organizationResolvers(orgs: OrganizationService, { env, oneMutation, authorization: auth, client }: ResolverTools) {
  const op = organizationsApi.operations;
  const id = (input: Record<string, unknown>) => parse(op.getOrganization.params, { id: input.organizationId }).id;
  const member = (input: Record<string, unknown>) => parse(op.removeMember.params, { id: input.organizationId, userId: input.userId });
  const mutation =
    <T>(run: (e: Environment, input: Record<string, unknown>, c: GraphQLContext) => Promise<T>) =>
    ({ input }: Input, c: GraphQLContext) =>
      oneMutation(c, async () => run(await env(c), input ?? {}, c));
  return {
    organizations: async (_: unknown, c: GraphQLContext) => orgs.list(await env(c), auth(c)),
    organization: async (args: { id: unknown }, c: GraphQLContext) =>
      orgs.get(await env(c), auth(c), parse(op.getOrganization.params, { id: args.id }).id),
    createOrganization: mutation((e, input, c) => orgs.create(e, auth(c), parse(op.createOrganization.body, input), client(c))),
    renameOrganization: mutation((e, input, c) =>
      orgs.rename(e, auth(c), id(input), parse(op.renameOrganization.body, { name: input.name }), client(c)),
    ),
    deleteOrganization: mutation(async (e, input, c) => {
      await orgs.delete(e, auth(c), id(input), client(c));
      return { message: ORGANIZATION_DELETED };
    }),
    inviteMember: mutation((e, input, c) =>
      orgs.invite(e, auth(c), id(input), parse(op.inviteMember.body, { email: input.email, role: input.role }), client(c)),
    ),
    revokeInvitation: mutation((e, input, c) => {
      const p = parse(op.revokeInvitation.params, { id: input.organizationId, invitationId: input.invitationId });
      return orgs.revokeInvitation(e, auth(c), p.id, p.invitationId, client(c));
    }),
    acceptInvitation: mutation((e, input, c) => orgs.accept(e, auth(c), parse(op.acceptInvitation.body, input), client(c))),
    changeMemberRole: mutation((e, input, c) => {
      const p = member(input);
      return orgs.changeRole(e, auth(c), p.id, p.userId, parse(op.changeMemberRole.body, { role: input.role }), client(c));
    }),
    removeMember: mutation(async (e, input, c) => {
      const p = member(input);
      await orgs.removeMember(e, auth(c), p.id, p.userId, client(c));
      return { message: MEMBER_REMOVED };
    }),
    switchOrganization: mutation((e, input, c) =>
      orgs.switchActive(e, auth(c), parse(op.switchOrganization.body, { organizationId: input.organizationId ?? null })),
    ),
  };
}
