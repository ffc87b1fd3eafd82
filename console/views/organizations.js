import { callApi, enc } from '../api.js';
import { h } from '../dom.js';
import { scrollTable, time } from '../format.js';
import { registerNav, registerRoute } from '../routing.js';
import { ask, problem, say, show } from '../shell.js';

// The Organizations page: the environment's organizations; one opened shows its members (change a
// role, remove one — never the last owner, the API says so), its open invitations (revoke one),
// an invitation form, and delete (after a confirmation). Views: #/organizations, #/organizations/<id>.

const orgs = (method, path, body) => callApi(method, `/api/rest/_organizations${path}`, body);

async function listView(ui) {
  const loading = h('p', {}, 'Loading…');
  ui.show('Organizations', loading);
  const page = await orgs('GET', '');
  if (!loading.isConnected) return; // navigated away meanwhile
  const rows = page.organizations.map((o) =>
    h(
      'tr',
      {},
      h('td', {}, h('a', { href: `#/organizations/${enc(o.id)}` }, o.name)),
      h('td', {}, String(o.members)),
      h('td', {}, time(o.createdAt)),
    ),
  );
  loading.replaceWith(
    rows.length
      ? ui.scrollTable('Organizations', ['Name', 'Members', 'Created'], rows)
      : h('p', {}, 'No organization in this environment yet.'),
  );
}

async function detailView(ui, id) {
  const hash = location.hash;
  const detail = await orgs('GET', `/${enc(id)}`);
  if (location.hash !== hash) return; // navigated away meanwhile
  const o = detail.organization;
  const act = async (what, fn) => {
    try {
      await fn();
      await detailView(ui, id);
      ui.say(what); // after the new view is shown: what it says is what the page shows
    } catch (err) {
      ui.problem(err);
    }
  };
  const roleField = (m) => {
    const select = h(
      'select',
      {
        'aria-label': `Role of ${m.email}`,
        onchange: () =>
          act(`${m.email} is now ${select.value}.`, () => orgs('PATCH', `/${enc(id)}/members/${enc(m.userId)}`, { role: select.value })),
      },
      [...new Set(['owner', 'admin', 'member', m.role])].map((r) => h('option', { value: r, selected: r === m.role }, r)),
    );
    return select;
  };
  const members = detail.members.map((m) =>
    h(
      'tr',
      {},
      h('td', {}, m.email),
      h('td', {}, roleField(m)),
      h('td', {}, time(m.joinedAt)),
      h(
        'td',
        {},
        h(
          'button',
          {
            type: 'button',
            class: 'danger',
            'aria-label': `Remove ${m.email}`,
            onclick: async () => {
              if (!(await ui.ask(`Remove ${m.email} from ${o.name}? Their tokens for it stop working at once.`, 'Remove member', true)))
                return;
              await act(`${m.email} removed.`, () => orgs('DELETE', `/${enc(id)}/members/${enc(m.userId)}`));
            },
          },
          'Remove',
        ),
      ),
    ),
  );
  const invitations = detail.invitations.map((i) =>
    h(
      'tr',
      {},
      h('td', {}, i.email),
      h('td', {}, i.role),
      h('td', {}, i.status),
      h('td', {}, time(i.expiresAt)),
      h(
        'td',
        {},
        h(
          'button',
          {
            type: 'button',
            class: 'secondary',
            'aria-label': `Revoke the invitation of ${i.email}`,
            onclick: () => act('Invitation revoked.', () => orgs('DELETE', `/${enc(id)}/invitations/${enc(i.id)}`)),
          },
          'Revoke',
        ),
      ),
    ),
  );
  const email = h('input', { id: 'invite-email', name: 'email', type: 'email', required: true, autocomplete: 'off' });
  const role = h('input', { id: 'invite-role', name: 'role', value: 'member', required: true, autocomplete: 'off' });
  const inviteForm = h(
    'form',
    {
      class: 'inline',
      onsubmit: (e) => {
        e.preventDefault();
        void act(`Invitation sent to ${email.value.trim()}.`, () =>
          orgs('POST', `/${enc(id)}/invitations`, { email: email.value.trim(), role: role.value.trim() }),
        );
      },
    },
    h('label', { for: 'invite-email' }, 'E-mail'),
    email,
    h('label', { for: 'invite-role' }, 'Role'),
    role,
    h('button', { type: 'submit' }, 'Invite'),
  );
  const remove = h(
    'button',
    {
      type: 'button',
      class: 'danger',
      onclick: async () => {
        if (!(await ui.ask(`Delete ${o.name}? Its members' tokens for it stop working at once.`, 'Delete organization', true))) return;
        try {
          await orgs('DELETE', `/${enc(id)}`);
          ui.say(`Deleted ${o.name}.`);
          location.hash = '#/organizations';
        } catch (err) {
          ui.problem(err);
        }
      },
    },
    'Delete',
  );
  ui.show(
    o.name,
    h('p', {}, h('a', { href: '#/organizations' }, 'All organizations')),
    h('dl', {}, h('dt', {}, 'Created'), h('dd', {}, time(o.createdAt)), h('dt', {}, 'Id'), h('dd', {}, h('code', {}, o.id))),
    h('div', { class: 'actions' }, remove),
    h('h3', {}, 'Members'),
    ui.scrollTable('Members', ['E-mail', 'Role', 'Joined', ''], members),
    h('h3', {}, 'Invitations'),
    inviteForm,
    invitations.length
      ? ui.scrollTable('Invitations', ['E-mail', 'Role', 'Status', 'Expires', ''], invitations)
      : h('p', {}, 'No open invitation.'),
  );
}

const ui = { show, say, problem, ask, scrollTable };
registerRoute(/^\/organizations$/, () => listView(ui));
registerRoute(/^\/organizations\/([^/]+)$/, (id) => detailView(ui, id));
registerNav('Organizations', '#/organizations');
