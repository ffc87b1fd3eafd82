import { ANY_REQUEST_ERRORS, JSON_BODY_ERRORS, type Operation, type OperationGroup } from '../operation.js';
import { MANAGEMENT_SCOPE, managementHeaders } from '../webhooks/access.js';
import { settingsPatch, settingsView } from '../../projects/settings.js';

// The environment's settings over the management API: what `walgate project set` changes, with
// the same management token and headers as the webhook API.

const common = [...MANAGEMENT_SCOPE, ...ANY_REQUEST_ERRORS] as const;
const shared = { security: 'managementToken', headers: managementHeaders } as const;

const operations = {
  getEnvironment: {
    ...shared,
    method: 'get',
    path: '/',
    summary: "The environment's settings",
    description: 'Every setting with its current value (defaults filled in). Secrets are never returned.',
    success: { status: 200, description: 'The settings.', schema: settingsView },
    errors: common,
  },
  updateEnvironment: {
    ...shared,
    method: 'patch',
    path: '/',
    summary: "Change the environment's settings",
    description:
      'Any subset of the settings; each entry of `limits` on its own. Unknown keys are refused. Takes effect on every api process at once.',
    body: settingsPatch,
    success: { status: 200, description: 'The settings after the change.', schema: settingsView },
    errors: [...common, ...JSON_BODY_ERRORS],
  },
} satisfies Record<string, Operation>;

export const environmentApi = {
  tag: 'Environment settings',
  description:
    'Lifetimes, lockout, rate limits and allowed browser origins of one environment. Same management token and headers as the webhook API.',
  mount: '/api/rest/_environment',
  aliases: ['/gw/api/rest/_environment'],
  operations,
} satisfies OperationGroup;
