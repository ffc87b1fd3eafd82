-- Issue 36: a password reset ends everything the old password earned. Device tokens are
-- stateless (a MAC over the account, a device id and the time they were issued), so the reset's
-- time is what tells the ones issued before it: those no longer exempt a client from the account's
-- lock (src/auth/sessions/devices.ts). Null: never reset.
ALTER TABLE walgate.users ADD COLUMN IF NOT EXISTS password_reset_at timestamptz;
