import { call, clearSession, currentSession, saveSession } from '../api.js';
import { h } from '../dom.js';
import { go, nav } from '../routing.js';
import { say, show } from '../shell.js';

// Signing in and the session bar: the project, a picker of its environments, the navigation and
// signing out. The token stays in this tab's sessionStorage; the environments are asked once.

const sessionBar = document.getElementById('session');
let environments = null; // [names] of the signed-in project, once loaded

async function loadEnvironments() {
  try {
    const { environments: list } = await call('GET', '/_environments');
    environments = list.map((e) => e.name);
  } catch {
    environments = [currentSession()?.environment].filter(Boolean);
  }
  renderFrame();
}

export function renderFrame() {
  const s = currentSession();
  if (!s) {
    environments = null;
    sessionBar.replaceChildren();
    return;
  }
  if (environments === null) {
    environments = [s.environment];
    void loadEnvironments();
  }
  const names = environments.includes(s.environment) ? environments : [s.environment, ...environments];
  const picker = h(
    'select',
    {
      id: 'env-switch',
      name: 'environment',
      onchange: () => {
        saveSession({ ...currentSession(), environment: picker.value });
        say(`Environment ${picker.value}.`);
        go('#/');
      },
    },
    names.map((n) => h('option', { value: n, selected: n === s.environment }, n)),
  );
  sessionBar.replaceChildren(
    h('span', {}, 'Project ', h('strong', { id: 'project' }, s.projectId)),
    h('label', { for: 'env-switch' }, 'Environment'),
    picker,
    ...nav().map((l) => h('a', { href: l.href, class: 'nav' }, l.label)),
    h(
      'button',
      {
        type: 'button',
        class: 'secondary',
        onclick: () => {
          clearSession();
          say('Signed out.');
          go('#/');
        },
      },
      'Sign out',
    ),
  );
}

export function signInView() {
  const project = h('input', { id: 'project-id', name: 'project', required: true, autocomplete: 'off' });
  const environment = h('input', { id: 'environment', name: 'environment', required: true, value: 'master', autocomplete: 'off' });
  const token = h('input', {
    id: 'token',
    name: 'token',
    type: 'password',
    required: true,
    autocomplete: 'off',
    'aria-describedby': 'token-help',
  });
  const form = h(
    'form',
    {
      class: 'card',
      onsubmit: async (e) => {
        e.preventDefault();
        const candidate = { projectId: project.value.trim(), environment: environment.value.trim(), token: token.value.trim() };
        try {
          await call('GET', '?limit=1', undefined, candidate);
        } catch (err) {
          const env = err.violations?.find((v) => v.path === 'environment');
          say(
            err.status === 401
              ? 'That management token is not valid.'
              : env
                ? `Unknown environment: ${env.message}.`
                : `${err.code}: ${err.message}`,
            'error',
          );
          return;
        }
        form.reset(); // the token stays in sessionStorage only, not in the form
        saveSession(candidate);
        environments = null;
        say('Signed in.');
        go('#/');
      },
    },
    h('p', {}, 'Sign in with a management token (', h('code', {}, 'walgate token create --project <id>'), ').'),
    h('label', { for: 'project-id' }, 'Project ID'),
    project,
    h('label', { for: 'environment' }, 'Environment'),
    environment,
    h('label', { for: 'token' }, 'Management token'),
    token,
    h('p', { id: 'token-help', class: 'help' }, 'Kept in this tab only (session storage) until you sign out or close it.'),
    h('button', { type: 'submit' }, 'Sign in'),
  );
  show('Sign in', form);
}
