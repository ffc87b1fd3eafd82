import { ApiError, callApi, currentSession, enc } from '../api.js';
import { h } from '../dom.js';
import { scrollTable, time } from '../format.js';
import { registerNav, registerRoute } from '../routing.js';
import { ask, notFound, problem, say, show } from '../shell.js';

// The Destinations page (docs/destinations.md): the environment's NATS JetStream and RabbitMQ
// brokers — kind, URL, which credentials are set (never their values), the subscriptions that
// publish to each — a form to add one, and one opened to change its URL or credentials or delete
// it (refused while subscriptions use it: the page names them). Passwords and tokens are typed
// into password fields and sent once; the API never returns them.
// Views: #/destinations, #/destinations/<id>.

const destinations = (method, path, body) => callApi(method, `/api/rest/_destinations${path}`, body);

const KINDS = [
  ['nats', 'NATS JetStream'],
  ['rabbitmq', 'RabbitMQ'],
];

function credentialsSet(d) {
  const set = Object.entries(d.credentials)
    .filter(([, isSet]) => isSet)
    .map(([name]) => name);
  return set.length ? set.join(', ') : 'none';
}

const subscriptionLinks = (ids) =>
  ids.length ? ids.flatMap((id, i) => [i ? ', ' : '', h('a', { href: `#/w/${enc(id)}` }, h('code', {}, id))]) : 'none';

/** A labelled input; `type: 'password'` for a secret (never filled in from the API). */
function field(id, label, attrs = {}) {
  const input = h('input', { id, name: id, autocomplete: attrs.type === 'password' ? 'new-password' : 'off', ...attrs });
  return { input, label: h('label', { for: id }, label) };
}

function createForm() {
  const name = field('destination-name', 'Name', { required: true, placeholder: 'orders-bus', pattern: '[a-z0-9][a-z0-9_\\-]{0,62}' });
  const kind = h(
    'select',
    { id: 'destination-kind', name: 'kind' },
    KINDS.map(([value, text]) => h('option', { value }, text)),
  );
  const url = field('destination-url', 'URL', { required: true, placeholder: 'nats://nats.example.com:4222' });
  const username = field('destination-username', 'User name (optional)');
  const password = field('destination-password', 'Password (optional)', { type: 'password' });
  const token = field('destination-token', 'NATS token (optional)', { type: 'password' });
  kind.addEventListener('change', () => {
    url.input.placeholder = kind.value === 'nats' ? 'nats://nats.example.com:4222' : 'amqp://mq.example.com:5672/vhost';
    token.input.disabled = kind.value !== 'nats';
  });
  const optional = (f) => (f.input.value ? f.input.value : undefined);
  async function submit(e) {
    e.preventDefault();
    const s = currentSession();
    try {
      const { destination } = await destinations('POST', '', {
        projectId: s.projectId,
        environment: s.environment,
        name: name.input.value.trim(),
        kind: kind.value,
        url: url.input.value.trim(),
        username: optional(username),
        password: optional(password),
        token: token.input.disabled ? undefined : optional(token),
      });
      await listView();
      say(`Destination ${destination.name} created.`);
    } catch (err) {
      problem(err);
    }
  }
  return h(
    'form',
    { class: 'card', onsubmit: submit, 'aria-labelledby': 'new-destination' },
    h('h3', { id: 'new-destination' }, 'New destination'),
    name.label,
    name.input,
    h('p', { class: 'help' }, '1–63 characters of a-z, 0-9, _ and -; subscriptions name it. It cannot be changed.'),
    h('label', { for: 'destination-kind' }, 'Kind'),
    kind,
    url.label,
    url.input,
    h('p', { class: 'help' }, 'No credentials in the URL: give them below. They are stored encrypted and never shown again.'),
    ...credentialFields(username, password, token),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Create destination')),
  );
}

/** The user name, password and token fields (each a label and its input), as both forms show them. */
function credentialFields(...fields) {
  return fields.flatMap((f) => [f.label, f.input]);
}

async function listView() {
  const loading = h('p', {}, 'Loading…');
  const live = show('Destinations', loading);
  const page = await destinations('GET', '');
  const using = await Promise.all(page.destinations.map((d) => destinations('GET', `/${enc(d.id)}`).then((r) => r.subscriptions)));
  if (!live()) return;
  const rows = page.destinations.map((d, i) =>
    h(
      'tr',
      {},
      h('td', {}, h('a', { href: `#/destinations/${enc(d.id)}` }, d.name)),
      h('td', {}, d.kind),
      h('td', { class: 'url' }, d.url),
      h('td', {}, credentialsSet(d)),
      h('td', {}, subscriptionLinks(using[i])),
    ),
  );
  loading.replaceWith(
    h(
      'div',
      {},
      rows.length
        ? scrollTable('Destinations', ['Name', 'Kind', 'URL', 'Credentials set', 'Subscriptions'], rows)
        : h('p', { class: 'empty' }, 'No destination in this environment yet.'),
      createForm(),
    ),
  );
}

async function detailView(id) {
  const loading = h('p', {}, 'Loading…');
  const live = show('Destination', loading);
  let detail;
  try {
    detail = await destinations('GET', `/${enc(id)}`);
  } catch (err) {
    if (err instanceof ApiError && err.code === 'DESTINATION_NOT_FOUND')
      return notFound('Destination not found', `There is no destination ${id} in this environment.`);
    throw err;
  }
  if (!live()) return;
  const d = detail.destination;
  const url = field('destination-url', 'URL', { required: true, value: d.url });
  const username = field('destination-username', 'New user name');
  const password = field('destination-password', 'New password', { type: 'password' });
  const token = field('destination-token', 'New NATS token', { type: 'password', disabled: d.kind !== 'nats' });
  const clears = ['username', 'password', 'token'].map((name) =>
    h('input', { type: 'checkbox', id: `clear-${name}`, value: name, disabled: !d.credentials[name] }),
  );
  const refusal = h('div', { id: 'delete-refusal', role: 'status' });
  async function save(e) {
    e.preventDefault();
    const body = {};
    if (url.input.value.trim() !== d.url) body.url = url.input.value.trim();
    for (const c of clears) if (c.checked) body[c.value] = null;
    for (const [name, f] of [
      ['username', username],
      ['password', password],
      ['token', token],
    ])
      if (f.input.value) body[name] = f.input.value;
    if (!Object.keys(body).length) return say('Nothing to change.');
    try {
      await destinations('PATCH', `/${enc(id)}`, body);
      await detailView(id);
      say(`Destination ${d.name} saved: the tailer connects with it within about five seconds.`);
    } catch (err) {
      problem(err);
    }
  }
  async function remove() {
    if (!(await ask(`Delete the destination ${d.name}?`, 'Delete destination', true))) return;
    try {
      await destinations('DELETE', `/${enc(id)}`);
      // To the list without a hashchange (whose handler would clear what is said here).
      window.history.pushState(null, '', '#/destinations');
      await listView();
      say(`Destination ${d.name} deleted.`);
    } catch (err) {
      problem(err);
      if (err instanceof ApiError && err.code === 'DESTINATION_IN_USE') {
        const ids = err.details?.subscriptions ?? [];
        refusal.replaceChildren(
          h(
            'p',
            { class: 'error' },
            'Not deleted: these subscriptions deliver to it. Delete them or move them to another target first: ',
            subscriptionLinks(ids),
          ),
        );
      }
    }
  }
  show(
    d.name,
    h('p', {}, h('a', { href: '#/destinations' }, 'All destinations')),
    h(
      'dl',
      {},
      [
        ['Name', d.name],
        ['Kind', d.kind],
        ['Credentials set', credentialsSet(d)],
        ['Subscriptions', subscriptionLinks(detail.subscriptions)],
        ['Created', time(d.createdAt)],
        ['Changed', time(d.updatedAt)],
        ['Id', h('code', {}, d.id)],
      ].map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
    ),
    h(
      'form',
      { class: 'card', onsubmit: save, 'aria-labelledby': 'edit-destination' },
      h('h3', { id: 'edit-destination' }, 'Change'),
      url.label,
      url.input,
      ...credentialFields(username, password, token),
      h('p', { class: 'help' }, 'Empty fields keep what is set. A user name and password go together.'),
      h(
        'fieldset',
        {},
        h('legend', {}, 'Remove credentials'),
        h(
          'div',
          { class: 'checks' },
          clears.map((c) => h('label', { class: 'check', for: c.id }, c, ` ${c.value}`)),
        ),
      ),
      h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Save')),
    ),
    h('div', { class: 'actions' }, h('button', { type: 'button', class: 'danger', onclick: remove }, 'Delete')),
    refusal,
  );
}

registerRoute(/^\/destinations$/, () => listView());
registerRoute(/^\/destinations\/([^/]+)$/, (id) => detailView(id));
registerNav('Destinations', '#/destinations');
