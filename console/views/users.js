import { callApi, enc } from '../api.js';
import { h } from '../dom.js';
import { scrollTable, time } from '../format.js';
import { registerNav, registerRoute } from '../routing.js';
import { ask, problem, say, show } from '../shell.js';

// The Users page: search the environment's end users, open one to see their sessions, e-mails and
// events, disable or enable them, log them out everywhere, delete them (after a confirmation).
// Views by the URL's fragment: #/users, #/users/<id>. `ui` is the console's shell (shell.js).

const users = (method, path, body) => callApi(method, `/api/rest/_users${path}`, body);

const STATUSES = ['', 'unverified', 'active', 'locked', 'disabled'];

async function listView(ui, params) {
  const query = h('input', { id: 'user-query', name: 'query', type: 'search', value: params.get('query') ?? '', autocomplete: 'off' });
  const status = h(
    'select',
    { id: 'user-status', name: 'status' },
    STATUSES.map((s) => h('option', { value: s, selected: s === (params.get('status') ?? '') }, s || 'any')),
  );
  const form = h(
    'form',
    {
      class: 'inline',
      role: 'search',
      onsubmit: (e) => {
        e.preventDefault();
        const q = new URLSearchParams();
        if (query.value.trim()) q.set('query', query.value.trim());
        if (status.value) q.set('status', status.value);
        location.hash = `#/users${q.size ? `?${q}` : ''}`;
      },
    },
    h('label', { for: 'user-query' }, 'E-mail starts with'),
    query,
    h('label', { for: 'user-status' }, 'Status'),
    status,
    h('button', { type: 'submit' }, 'Search'),
  );
  // Held by reference: another view's late answer may look for its own #loading meanwhile.
  const loading = h('p', {}, 'Loading…');
  ui.show('Users', form, loading);
  const q = new URLSearchParams();
  for (const k of ['query', 'status']) if (params.get(k)) q.set(k, params.get(k));
  const page = await users('GET', q.size ? `?${q}` : '');
  if (!loading.isConnected) return; // navigated away meanwhile
  const rows = page.users.map((u) =>
    h(
      'tr',
      {},
      h('td', {}, h('a', { href: `#/users/${enc(u.id)}` }, u.email)),
      h('td', {}, h('span', { class: `badge ${u.status}` }, u.status)),
      h('td', {}, time(u.createdAt)),
    ),
  );
  loading.replaceWith(rows.length ? ui.scrollTable('Users', ['E-mail', 'Status', 'Created'], rows) : h('p', {}, 'No user matches.'));
}

async function detailView(ui, id) {
  const hash = location.hash;
  const [detail, trail] = await Promise.all([users('GET', `/${enc(id)}`), users('GET', `/${enc(id)}/events`)]);
  if (location.hash !== hash) return; // navigated away meanwhile
  const u = detail.user;
  const act = async (what, fn) => {
    try {
      await fn();
      await detailView(ui, id);
      ui.say(what); // after the new view is shown: what it says is what the page shows
    } catch (err) {
      ui.problem(err);
    }
  };
  const toggle = h(
    'button',
    {
      type: 'button',
      class: u.disabled ? '' : 'danger',
      onclick: () =>
        act(u.disabled ? 'User enabled.' : 'User disabled: every session ended.', () =>
          users('PATCH', `/${enc(id)}`, { disabled: !u.disabled }),
        ),
    },
    u.disabled ? 'Enable' : 'Disable',
  );
  const logout = h(
    'button',
    {
      type: 'button',
      class: 'secondary',
      onclick: () => act('Logged out everywhere.', () => users('POST', `/${enc(id)}/logout`)),
    },
    'Log out everywhere',
  );
  const remove = h(
    'button',
    {
      type: 'button',
      class: 'danger',
      onclick: async () => {
        if (!(await ui.ask(`Delete ${u.email} and everything of theirs? This cannot be undone.`, 'Delete user', true))) return;
        try {
          await users('DELETE', `/${enc(id)}`);
          ui.say(`Deleted ${u.email}.`);
          location.hash = '#/users';
        } catch (err) {
          ui.problem(err);
        }
      },
    },
    'Delete',
  );
  const facts = h(
    'dl',
    {},
    h('dt', {}, 'Status'),
    h('dd', { id: 'user-state' }, u.status),
    h('dt', {}, 'E-mail confirmed'),
    h('dd', {}, u.emailVerified ? 'yes' : 'no'),
    h('dt', {}, 'Created'),
    h('dd', {}, time(u.createdAt)),
    h('dt', {}, 'App metadata'),
    h('dd', {}, h('code', {}, JSON.stringify(u.appMetadata))),
  );
  const sessions = detail.sessions.map((s) =>
    h(
      'tr',
      {},
      h('td', {}, time(s.createdAt)),
      h('td', {}, time(s.expiresAt)),
      h('td', {}, s.revokedAt ? `ended (${s.revokedReason ?? ''})` : 'live'),
    ),
  );
  const emails = detail.emails.map((m) =>
    h('tr', {}, h('td', {}, m.purpose), h('td', {}, m.state), h('td', {}, String(m.attempts)), h('td', {}, time(m.createdAt))),
  );
  // Second factors: what they are and when last used, never a secret; an operator removes one
  // for a user who lost their phone or key (their next login asks for the others, or none).
  const factors = detail.factors.map((f) =>
    h(
      'tr',
      {},
      h('td', {}, f.type === 'totp' ? 'Authenticator app' : 'Passkey'),
      h('td', {}, f.name ?? '—'),
      h('td', {}, time(f.createdAt)),
      h('td', {}, f.lastUsedAt ? time(f.lastUsedAt) : 'never'),
      h(
        'td',
        {},
        h(
          'button',
          {
            type: 'button',
            class: 'danger',
            'aria-label': `Remove factor ${f.name ?? f.type}`,
            onclick: async () => {
              if (
                !(await ui.ask(
                  `Remove this ${f.type === 'totp' ? 'authenticator app' : 'passkey'} from ${u.email}?`,
                  'Remove factor',
                  true,
                ))
              )
                return;
              await act('Factor removed.', () => users('DELETE', `/${enc(id)}/factors/${enc(f.id)}`));
            },
          },
          'Remove',
        ),
      ),
    ),
  );
  const events = trail.events.map((e) =>
    h('tr', {}, h('td', {}, time(e.createdAt)), h('td', {}, e.type), h('td', {}, e.clientAddress ?? '—'), h('td', {}, e.actor ?? '—')),
  );
  ui.show(
    u.email,
    h('p', {}, h('a', { href: '#/users' }, 'All users')),
    facts,
    h('div', { class: 'actions' }, toggle, logout, remove),
    h('h3', {}, 'Sessions'),
    sessions.length ? ui.scrollTable('Sessions', ['Started', 'Expires', 'State'], sessions) : h('p', {}, 'No session.'),
    h('h3', {}, 'Second factors'),
    factors.length
      ? ui.scrollTable('Second factors', ['Kind', 'Name', 'Added', 'Last used', ''], factors)
      : h('p', {}, 'No second factor.'),
    h('h3', {}, 'E-mails'),
    emails.length ? ui.scrollTable('E-mails', ['Purpose', 'State', 'Tries', 'Written'], emails) : h('p', {}, 'No e-mail.'),
    h('h3', {}, 'Events'),
    events.length ? ui.scrollTable('Events', ['When', 'Type', 'Client', 'By'], events) : h('p', {}, 'No event.'),
  );
}

const ui = { show, say, problem, ask, scrollTable };
registerRoute(/^\/users$/, (query) => listView(ui, query));
registerRoute(/^\/users\/([^/]+)$/, (id) => detailView(ui, id));
registerNav('Users', '#/users');
