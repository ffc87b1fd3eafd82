// The audit trail's event types: what happened to an account, one constant each. Subscribers
// filter on these strings (`{"type": "user.signed_up"}`), so they are a contract: add, never rename.

export const AUTH_EVENT = {
  signedUp: 'user.signed_up',
  confirmed: 'user.confirmed',
  loggedIn: 'user.logged_in',
  loginFailed: 'user.login_failed',
  locked: 'user.locked',
  recoveryRequested: 'user.recovery_requested',
  passwordReset: 'user.password_reset',
  loggedOut: 'user.logged_out',
  sessionRevoked: 'user.session_revoked',
  disabled: 'user.disabled',
  enabled: 'user.enabled',
  deleted: 'user.deleted',
  metadataChanged: 'user.metadata_changed',
  created: 'user.created',
  invited: 'user.invited',
  emailVerified: 'user.email_verified',
  identityLinked: 'user.identity_linked',
  identityUnlinked: 'user.identity_unlinked',
  providerSignedIn: 'user.provider_signed_in',
  // Second factors (src/auth/mfa/): `details` name the factor's id and type, never a secret.
  mfaFactorAdded: 'user.mfa_factor_added',
  mfaFactorRemoved: 'user.mfa_factor_removed',
  recoveryCodeUsed: 'user.recovery_code_used',
  recoveryCodesRegenerated: 'user.recovery_codes_regenerated',
  /** A wrong second factor at the MFA step (`details.method`: otp, recovery or webauthn). */
  mfaFailed: 'user.mfa_failed',
  /** A refresh token presented again after its grace, or after its successor was used: the session was ended. */
  refreshReuse: 'user.refresh_reuse',
  // Passwordless sign-in (src/auth/passwordless/): a code or link was mailed; `details.method` says which.
  passwordlessRequested: 'user.passwordless_requested',
  // An operator started a time-boxed session as the user (users/impersonate.ts); `actor` is the management token.
  impersonationStarted: 'user.impersonation_started',
  // Organizations (src/auth/organizations/): `details` name the organization and the roles.
  organizationCreated: 'organization.created',
  organizationRenamed: 'organization.renamed',
  organizationDeleted: 'organization.deleted',
  memberAdded: 'member.added',
  memberRoleChanged: 'member.role_changed',
  memberRemoved: 'member.removed',
  invitationSent: 'invitation.sent',
  invitationAccepted: 'invitation.accepted',
  invitationRevoked: 'invitation.revoked',
} as const;

export type AuthEventType = (typeof AUTH_EVENT)[keyof typeof AUTH_EVENT];

export const AUTH_EVENT_TYPES: readonly AuthEventType[] = Object.values(AUTH_EVENT);
