import { ApiError, call, callApi, clearSession, currentSession, enc, saveSession } from './api.js';
import { minuteChart } from './chart.js';
import { h, time } from './dom.js';
import { usersRoute } from './users.js';

// The delivery console: one project (the management token's) and its environments. Views by the
// URL's fragment (#/, #/new, #/w/<id>, #/w/<id>/edit) — ids only: the token never goes in a URL.

const main = document.getElementById('main');
const statusLine = document.getElementById('status');
const sessionBar = document.getElementById('session');
const dialog = document.getElementById('dialog');

const POLL_MS = 2000;
let poller = null;

function stopPolling() {
  clearInterval(poller);
  poller = null;
}

function say(text, kind = 'info') {
  statusLine.textContent = text;
  statusLine.className = kind;
}

function problem(err) {
  if (err instanceof ApiError && err.status === 401) {
    clearSession();
    say('Signed out: the management token is missing, invalid or revoked.', 'error');
    void route();
    return;
  }
  const details = err.violations?.length ? ` (${err.violations.map((v) => `${v.path}: ${v.message}`).join('; ')})` : '';
  say(`${err.code ?? 'ERROR'}: ${err.message}${details}`, 'error');
}

/** Replaces the view; its heading takes the focus, so keyboard and screen-reader users land on it. */
function show(title, ...content) {
  stopPolling();
  const heading = h('h2', { id: 'view-title', tabindex: '-1' }, title);
  main.replaceChildren(heading, ...content);
  document.title = `${title} — walgate console`;
  heading.focus();
}

/** A modal question; resolves true when confirmed. Esc or Cancel answers no. */
function ask(question, confirmLabel, danger = false) {
  return new Promise((resolve) => {
    const cancel = h('button', { type: 'button', class: 'secondary', onclick: () => dialog.close('no') }, 'Cancel');
    const confirm = h('button', { type: 'button', class: danger ? 'danger' : '', onclick: () => dialog.close('yes') }, confirmLabel);
    dialog.replaceChildren(h('h2', { id: 'dialog-title' }, 'Please confirm'), h('p', {}, question), h('div', { class: 'actions' }, cancel, confirm));
    dialog.setAttribute('aria-labelledby', 'dialog-title');
    dialog.returnValue = 'no';
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'yes'), { once: true });
    dialog.showModal();
    cancel.focus();
  });
}

/** A fresh Standard Webhooks secret: whsec_ + 32 random bytes in base64. */
function generateSecret() {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}

/** The secret, shown once: after this the API never returns it. */
function secretOnce(secret, intro) {
  const code = h('code', { id: 'new-secret' }, secret);
  const copy = h('button', { type: 'button', class: 'secondary', onclick: () => navigator.clipboard?.writeText(secret).then(() => say('Secret copied.')) }, 'Copy');
  return h('section', { class: 'secret', 'aria-labelledby': 'secret-title' }, h('h3', { id: 'secret-title' }, 'Signing secret — shown once'), h('p', {}, intro), h('p', {}, code, ' ', copy));
}

function stateOf(w, health) {
  if (health?.disabledReason) return ['disabled', `Disabled: ${health.disabledReason}`];
  if (w.problems?.length) return ['problem', `Problem: ${w.problems.map((p) => p.code).join(', ')}`];
  if (!w.active) return ['paused', 'Paused'];
  if (health?.breaker.state === 'open') return ['open', 'Breaker open'];
  if (health?.breaker.state === 'half-open') return ['open', 'Breaker half-open'];
  return ['active', 'Active'];
}

const badge = ([kind, text]) => h('span', { class: `badge ${kind}` }, text);

/** A table that scrolls sideways on a narrow screen, reachable by keyboard. */
function scrollTable(label, head, rows) {
  return h(
    'div',
    { class: 'scroll', role: 'region', 'aria-label': label, tabindex: '0' },
    h('table', {}, h('thead', {}, h('tr', {}, head.map((c) => h('th', { scope: 'col' }, c)))), h('tbody', {}, rows)),
  );
}

// --- signing in ---------------------------------------------------------------------------------

function renderSessionBar() {
  const s = currentSession();
  if (!s) {
    sessionBar.replaceChildren();
    return;
  }
  const env = h('input', { id: 'env-switch', name: 'environment', value: s.environment, required: true, size: 10 });
  const form = h(
    'form',
    {
      class: 'inline',
      onsubmit: (e) => {
        e.preventDefault();
        saveSession({ ...s, environment: env.value.trim() });
        say(`Environment ${env.value.trim()}.`);
        location.hash = '#/';
        void route();
      },
    },
    h('span', {}, 'Project ', h('strong', { id: 'project' }, s.projectId)),
    h('label', { for: 'env-switch' }, 'Environment'),
    env,
    h('button', { type: 'submit', class: 'secondary' }, 'Switch'),
    h(
      'button',
      {
        type: 'button',
        class: 'secondary',
        onclick: () => {
          clearSession();
          say('Signed out.');
          location.hash = '#/';
          void route();
        },
      },
      'Sign out',
    ),
  );
  const views = h('span', { class: 'views' }, h('a', { href: '#/' }, 'Webhooks'), ' ', h('a', { href: '#/users' }, 'Users'));
  sessionBar.replaceChildren(views, form);
}

function signInView() {
  const project = h('input', { id: 'project-id', name: 'project', required: true, autocomplete: 'off' });
  const environment = h('input', { id: 'environment', name: 'environment', required: true, value: 'master', autocomplete: 'off' });
  const token = h('input', { id: 'token', name: 'token', type: 'password', required: true, autocomplete: 'off', 'aria-describedby': 'token-help' });
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
          say(err.status === 401 ? 'That management token is not valid.' : `${err.code}: ${err.message}`, 'error');
          return;
        }
        form.reset(); // the token stays in sessionStorage only, not in the form
        saveSession(candidate);
        say('Signed in.');
        location.hash = '#/';
        void route();
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

// --- subscriptions ------------------------------------------------------------------------------

async function listView() {
  show('Subscriptions', h('p', {}, h('a', { href: '#/new', class: 'button' }, 'New subscription')), h('p', { id: 'loading' }, 'Loading…'));
  const [{ webhooks }, gaps] = await Promise.all([call('GET', '?limit=100'), callApi('GET', '/api/rest/_gaps?open=true').catch(() => ({ gaps: [] }))]);
  if (gaps.gaps.length) main.querySelector('#loading').before(gapBanner(gaps.gaps));
  const details = await Promise.all(webhooks.map((w) => call('GET', `/${enc(w.id)}`).catch(() => null)));
  const rows = webhooks.map((w, i) =>
    h(
      'tr',
      {},
      h('td', {}, h('a', { href: `#/w/${enc(w.id)}` }, w.table)),
      h('td', {}, w.events.join(', ')),
      h('td', { class: 'url' }, w.url),
      h('td', {}, badge(stateOf(w, details[i]?.health))),
    ),
  );
  main.querySelector('#loading').replaceWith(
    webhooks.length ? scrollTable('Subscriptions', ['Table', 'Events', 'URL', 'State'], rows) : h('p', {}, 'No subscription in this environment yet.'),
  );
}

/** Open capture gaps: changes that were never captured, until acknowledged. */
function gapBanner(gaps) {
  const acknowledge = async () => {
    for (const g of gaps) await callApi('POST', `/api/rest/_gaps/${enc(g.id)}/acknowledge`);
    say('Gaps acknowledged.');
    void route();
  };
  return h(
    'section',
    { class: 'banner', role: 'alert', id: 'gap-banner' },
    h('strong', {}, `Changes were lost: ${gaps.length} capture gap${gaps.length > 1 ? 's' : ''}.`),
    ...gaps.map((g) => h('p', {}, `${g.reason === 'slot_lost' ? 'The replication slot lost WAL' : 'The replication slot was missing'}: changes from `, time(g.fromTime), ' to ', time(g.toTime), ` (${g.webhookIds.length} subscription${g.webhookIds.length === 1 ? '' : 's'}) were not captured.`)),
    h('button', { type: 'button', onclick: acknowledge }, 'Acknowledge'),
  );
}

/** Filter values: JSON numbers, true, false and null are taken as such; anything else is text. */
function filterValue(text) {
  try {
    const v = JSON.parse(text);
    if (v === null || ['number', 'boolean', 'string'].includes(typeof v)) return v;
  } catch {
    /* text */
  }
  return text;
}

async function formView(id) {
  show(id ? 'Edit subscription' : 'New subscription', h('p', { id: 'loading' }, 'Loading…'));
  const [{ tables }, existing] = await Promise.all([call('GET', '/_tables'), id ? call('GET', `/${enc(id)}`) : null]);
  const w = existing?.webhook;
  if (!tables.length) {
    main.querySelector('#loading').replaceWith(h('p', {}, 'This environment has no table yet: create one in its Postgres schema first.'));
    return;
  }
  const table = h('select', { id: 'table', name: 'table', required: true }, tables.map((t) => h('option', { value: t.name, selected: t.name === w?.table }, t.name)));
  const events = ['INSERT', 'UPDATE', 'DELETE'].map((e) => h('input', { type: 'checkbox', id: `event-${e}`, value: e, checked: w ? w.events.includes(e) : true }));
  const url = h('input', { id: 'url', name: 'url', type: 'url', required: true, placeholder: 'https://example.com/hooks', value: w?.url ?? '' });
  const active = h('input', { type: 'checkbox', id: 'active', checked: w ? w.active : true });
  const rowOrdered = h('input', { type: 'checkbox', id: 'ordering', checked: w?.ordering === 'row' });
  const filterRows = h('div', { id: 'filter-rows' });
  const selectBox = h('div', { id: 'select-columns', class: 'checks' });
  let n = 0;
  const columns = () => tables.find((t) => t.name === table.value)?.columns ?? [];

  function addFilterRow(column, value) {
    const i = n++;
    const col = h('select', { id: `filter-col-${i}`, class: 'filter-col' }, columns().map((c) => h('option', { value: c.name, selected: c.name === column }, c.name)));
    const val = h('input', { id: `filter-val-${i}`, class: 'filter-val', value: value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value) });
    const row = h(
      'div',
      { class: 'filter-row' },
      h('label', { for: `filter-col-${i}` }, 'Column'),
      col,
      h('label', { for: `filter-val-${i}` }, 'equals'),
      val,
      h('button', { type: 'button', class: 'secondary', onclick: () => row.remove() }, 'Remove'),
    );
    filterRows.append(row);
    col.focus();
  }
  function renderColumns(selected) {
    filterRows.replaceChildren();
    selectBox.replaceChildren(
      ...columns().map((c) =>
        h('label', { class: 'check' }, h('input', { type: 'checkbox', value: c.name, checked: selected?.includes(c.name) }), ` ${c.name} `, h('small', {}, c.type)),
      ),
    );
  }
  table.addEventListener('change', () => renderColumns(null));
  renderColumns(w?.select);
  for (const [k, v] of Object.entries(w?.filter ?? {})) addFilterRow(k, v);

  const form = h(
    'form',
    {
      class: 'card',
      onsubmit: async (e) => {
        e.preventDefault();
        const filter = {};
        for (const row of filterRows.querySelectorAll('.filter-row')) filter[row.querySelector('.filter-col').value] = filterValue(row.querySelector('.filter-val').value);
        const picked = [...selectBox.querySelectorAll('input:checked')].map((c) => c.value);
        const ordering = rowOrdered.checked ? 'row' : 'none';
        const body = {
          table: table.value,
          events: events.filter((c) => c.checked).map((c) => c.value),
          url: url.value.trim(),
          active: active.checked,
          filter: Object.keys(filter).length ? filter : null,
          select: picked.length ? picked : null,
          // Sent when it changes: a PATCH that names "row" re-checks the table's primary key.
          ...(w && w.ordering === ordering ? {} : { ordering }),
        };
        try {
          if (id) {
            await call('PATCH', `/${enc(id)}`, body);
            say('Subscription saved.');
            location.hash = `#/w/${enc(id)}`;
          } else {
            const s = currentSession();
            const secret = generateSecret();
            const { webhook } = await call('POST', '', { ...body, projectId: s.projectId, environment: s.environment, secret });
            say('Subscription created.');
            show(
              'Subscription created',
              secretOnce(secret, 'Give this secret to the receiver now, to verify signatures: walgate keeps it encrypted and never shows it again.'),
              h('p', {}, h('a', { href: `#/w/${enc(webhook.id)}`, class: 'button' }, 'Open the subscription')),
            );
          }
        } catch (err) {
          problem(err);
        }
      },
    },
    h('label', { for: 'table' }, 'Table'),
    table,
    h('fieldset', {}, h('legend', {}, 'Events'), h('div', { class: 'checks' }, events.map((c) => h('label', { class: 'check', for: c.id }, c, ` ${c.value}`)))),
    h('label', { for: 'url' }, 'Receiver URL (https)'),
    url,
    h(
      'fieldset',
      {},
      h('legend', {}, 'Filter (all must match)'),
      filterRows,
      h('button', { type: 'button', class: 'secondary', onclick: () => addFilterRow() }, 'Add a condition'),
      h('p', { class: 'help' }, 'Numbers, true, false and null are compared as such; quote a value ("42") to compare it as text.'),
    ),
    h('fieldset', {}, h('legend', {}, 'Columns to send (none: all)'), selectBox),
    h('label', { class: 'check', for: 'active' }, active, ' Active (unchecked: paused)'),
    h('label', { class: 'check', for: 'ordering' }, rowOrdered, " Row ordering: a row's changes one at a time, in commit order (needs a primary key)"),
    id ? null : h('p', { class: 'help' }, 'A whsec_ signing secret is generated when you create the subscription and shown once.'),
    h('div', { class: 'actions' }, h('a', { href: id ? `#/w/${enc(id)}` : '#/', class: 'button secondary' }, 'Cancel'), h('button', { type: 'submit' }, id ? 'Save' : 'Create')),
  );
  main.querySelector('#loading').replaceWith(form);
}

// --- one subscription: health, chart, deliveries ------------------------------------------------

async function detailView(id) {
  const path = `/${enc(id)}`;
  const summary = h('section', { id: 'summary', 'aria-label': 'Subscription' });
  const actions = h('div', { class: 'actions', id: 'actions' });
  const secretSlot = h('div', { id: 'secret-slot' });
  const chart = h('section', { id: 'chart', 'aria-labelledby': 'chart-title' }, h('h3', { id: 'chart-title' }, 'Last hour'));
  const status = h('select', { id: 'f-status' }, h('option', { value: '' }, 'any'), ['pending', 'retrying', 'delivered', 'dead'].map((s) => h('option', { value: s }, s)));
  const since = h('input', { id: 'f-since', type: 'datetime-local' });
  const until = h('input', { id: 'f-until', type: 'datetime-local' });
  const list = h('div', { id: 'deliveries' });
  const more = h('div', { id: 'more' });
  const detail = h('section', { id: 'delivery', 'aria-live': 'polite' });
  let webhook;
  let nextCursor = null;
  let pagesShown = 1;

  const query = (cursor) => {
    const q = new URLSearchParams({ limit: '25' });
    if (status.value) q.set('status', status.value);
    if (since.value) q.set('since', new Date(since.value).toISOString());
    if (until.value) q.set('until', new Date(until.value).toISOString());
    if (cursor) q.set('cursor', cursor);
    return `${path}/deliveries?${q}`;
  };

  function deliveryRow(d) {
    return h(
      'tr',
      { 'data-id': d.id },
      h('td', {}, time(d.createdAt)),
      h('td', {}, d.event),
      h('td', {}, h('span', { class: `badge ${d.status}` }, d.status)),
      h('td', {}, d.httpStatus ?? '—'),
      h('td', {}, String(d.attempts)),
      h('td', {}, d.lastError ?? ''),
      h('td', {}, h('button', { type: 'button', class: 'secondary open', 'data-id': d.id, 'aria-label': `Details of the ${d.event} delivery created ${new Date(d.createdAt).toLocaleString()}`, onclick: () => openDelivery(d.id) }, 'Details')),
    );
  }

  function renderDeliveries(deliveries, append) {
    const rows = deliveries.map(deliveryRow);
    const tbody = list.querySelector('tbody');
    if (append && tbody) tbody.append(...rows);
    else {
      // Polling re-renders the list: the focused button keeps the focus.
      const focused = document.activeElement?.closest?.('#deliveries') ? document.activeElement.getAttribute('data-id') : null;
      list.replaceChildren(
        deliveries.length ? scrollTable('Deliveries', ['Created', 'Event', 'Status', 'HTTP', 'Attempts', 'Last error', ''], rows) : h('p', {}, 'No delivery matches.'),
      );
      if (focused) list.querySelector(`button[data-id="${CSS.escape(focused)}"]`)?.focus();
    }
    more.replaceChildren(nextCursor ? h('button', { type: 'button', class: 'secondary', onclick: loadMore }, 'Load older deliveries') : '');
  }

  async function loadMore() {
    try {
      const page = await call('GET', query(nextCursor));
      nextCursor = page.nextCursor;
      pagesShown++;
      renderDeliveries(page.deliveries, true);
    } catch (err) {
      problem(err);
    }
  }

  async function refreshDeliveries() {
    const page = await call('GET', query());
    nextCursor = page.nextCursor;
    pagesShown = 1;
    renderDeliveries(page.deliveries, false);
  }

  async function refreshSummary() {
    const [got, { minutes }] = await Promise.all([call('GET', path), call('GET', `${path}/minutes`)]);
    webhook = got.webhook;
    const health = got.health;
    const b = health.breaker;
    summary.replaceChildren(
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'State'),
        h('dd', { id: 'state' }, badge(stateOf(webhook, health))),
        h('dt', {}, 'Table'),
        h('dd', {}, webhook.table),
        h('dt', {}, 'Events'),
        h('dd', {}, webhook.events.join(', ')),
        h('dt', {}, 'URL'),
        h('dd', { class: 'url' }, webhook.url),
        h('dt', {}, 'Filter'),
        h('dd', {}, webhook.filter ? JSON.stringify(webhook.filter) : 'none'),
        h('dt', {}, 'Columns'),
        h('dd', {}, webhook.select ? webhook.select.join(', ') : 'all'),
        h('dt', {}, 'Ordering'),
        h('dd', {}, webhook.ordering === 'row' ? 'per row, in commit order' : 'none'),
        h('dt', {}, 'Breaker'),
        h('dd', {}, b.state === 'open' ? ['open until ', time(b.openUntil)] : b.state, b.consecutiveFailures ? ` (${b.consecutiveFailures} consecutive failures)` : ''),
        health.disabledReason ? [h('dt', {}, 'Disabled'), h('dd', {}, health.disabledReason, ' — ', time(health.disabledAt))] : null,
        webhook.problems.length ? [h('dt', {}, 'Problems'), h('dd', { id: 'problems' }, webhook.problems.map((p) => h('p', {}, badge(['problem', p.code]), ' ', p.message, ' — since ', time(p.since))))] : null,
        h('dt', {}, 'Last success'),
        h('dd', {}, time(health.lastSuccessAt)),
        h('dt', {}, 'Failures, last hour'),
        h('dd', { id: 'failures' }, String(health.failuresLastHour)),
      ),
    );
    actions.replaceChildren(
      h('button', { type: 'button', id: 'toggle-active', onclick: toggleActive }, webhook.active ? 'Pause' : 'Resume'),
      h('button', { type: 'button', id: 'rotate', class: 'secondary', onclick: rotate }, 'Rotate secret'),
      h('a', { href: `#/w/${enc(id)}/edit`, class: 'button secondary' }, 'Edit'),
      h('button', { type: 'button', id: 'delete', class: 'danger', onclick: remove }, 'Delete'),
    );
    chart.replaceChildren(chart.firstChild, minuteChart(minutes));
  }

  async function refresh() {
    await refreshSummary();
    if (pagesShown === 1) await refreshDeliveries();
  }

  async function toggleActive() {
    try {
      await call('PATCH', path, { active: !webhook.active });
      say(webhook.active ? 'Paused: changes made meanwhile are not delivered.' : 'Resumed.');
      await refreshSummary();
      document.getElementById('toggle-active')?.focus();
    } catch (err) {
      problem(err);
    }
  }

  async function rotate() {
    if (!(await ask('Rotate the signing secret? The current one keeps signing alongside the new one for the grace period (WEBHOOK_SECRET_GRACE_MS).', 'Rotate'))) return;
    const secret = generateSecret();
    try {
      await call('PATCH', path, { secret });
      secretSlot.replaceChildren(secretOnce(secret, 'The new secret. Add it to the receiver, which may accept both until the old one stops signing.'));
      say('Secret rotated.');
      secretSlot.querySelector('#new-secret')?.closest('section')?.querySelector('button')?.focus();
    } catch (err) {
      problem(err);
    }
  }

  async function remove() {
    if (!(await ask(`Delete the subscription on ${webhook.table} → ${webhook.url}? Its deliveries go with it.`, 'Delete', true))) return;
    try {
      await call('DELETE', path);
      say('Subscription deleted.');
      location.hash = '#/';
    } catch (err) {
      problem(err);
    }
  }

  async function replay() {
    try {
      const { replayed: count } = await call('POST', `${path}/replay`, { dryRun: true });
      if (count === 0) {
        say('There is no dead letter to replay.');
        return;
      }
      if (!(await ask(`Replay ${count} dead deliver${count === 1 ? 'y' : 'ies'}? They are sent again with a fresh set of attempts.`, 'Replay'))) return;
      const { replayed, replay: job } = await call('POST', `${path}/replay`, {});
      // A large replay runs in the background: what it will do, not the none it has done yet.
      if (job?.state === 'running') say(`Replaying ${job.count} dead deliveries in the background.`);
      else say(`Replayed ${replayed} dead deliver${replayed === 1 ? 'y' : 'ies'}.`);
      await refreshDeliveries();
    } catch (err) {
      problem(err);
    }
  }

  async function openDelivery(deliveryId) {
    try {
      const { delivery: d } = await call('GET', `${path}/deliveries/${enc(deliveryId)}`);
      const attempts = d.attemptLog.map((a) =>
        h(
          'tr',
          {},
          h('td', {}, String(a.attempt)),
          h('td', {}, time(a.startedAt)),
          h('td', {}, `${a.durationMs} ms`),
          h('td', {}, a.httpStatus ?? '—'),
          h('td', {}, a.error ?? ''),
          h('td', {}, a.responseBody === null ? '—' : h('pre', { class: 'answer' }, a.responseBody)),
        ),
      );
      const retry =
        d.status === 'delivered' || d.status === 'dead'
          ? h(
              'button',
              {
                type: 'button',
                id: 'retry',
                onclick: async () => {
                  try {
                    await call('POST', `${path}/deliveries/${enc(d.id)}/retry`);
                    say('Sent again: the delivery is pending.');
                    await openDelivery(d.id);
                  } catch (err) {
                    problem(err);
                  }
                },
              },
              'Retry now',
            )
          : null;
      detail.replaceChildren(
        h('h3', { id: 'delivery-title', tabindex: '-1' }, `Delivery ${d.id}`),
        h(
          'dl',
          { class: 'facts' },
          h('dt', {}, 'Status'),
          h('dd', { id: 'delivery-status' }, h('span', { class: `badge ${d.status}` }, d.status)),
          h('dt', {}, 'Event id'),
          h('dd', {}, h('code', {}, d.eventId)),
          h('dt', {}, 'Next attempt'),
          h('dd', {}, time(d.nextAttemptAt)),
          h('dt', {}, 'Delivered'),
          h('dd', {}, time(d.deliveredAt)),
        ),
        h('div', { class: 'actions' }, retry, h('button', { type: 'button', class: 'secondary', onclick: () => openDelivery(d.id) }, 'Reload')),
        h('h4', {}, 'Attempts'),
        attempts.length ? scrollTable('Attempts', ['#', 'Started', 'Took', 'HTTP', 'Error', 'Answer (first KiB)'], attempts) : h('p', {}, 'No attempt yet.'),
        h('h4', {}, 'Payload'),
        d.payload ? h('pre', { class: 'payload', tabindex: '0', 'aria-label': 'Payload' }, JSON.stringify(d.payload, null, 2)) : h('p', {}, 'No longer kept.'),
      );
      detail.querySelector('#delivery-title').focus();
    } catch (err) {
      problem(err);
    }
  }

  const filters = h(
    'form',
    {
      class: 'filters',
      onsubmit: async (e) => {
        e.preventDefault();
        try {
          await refreshDeliveries();
        } catch (err) {
          problem(err);
        }
      },
    },
    h('label', { for: 'f-status' }, 'Status'),
    status,
    h('label', { for: 'f-since' }, 'Since'),
    since,
    h('label', { for: 'f-until' }, 'Until'),
    until,
    h('button', { type: 'submit', class: 'secondary' }, 'Apply'),
    h('button', { type: 'button', id: 'replay', onclick: replay }, 'Replay dead letters…'),
  );

  show(
    'Subscription',
    h('p', {}, h('a', { href: '#/' }, '← All subscriptions')),
    summary,
    actions,
    secretSlot,
    chart,
    h('section', { 'aria-labelledby': 'deliveries-title' }, h('h3', { id: 'deliveries-title' }, 'Deliveries'), filters, list, more),
    detail,
  );
  await refresh();
  // New deliveries appear without a reload; the first page only, so paging back is left alone.
  if (!main.contains(summary)) return; // navigated away meanwhile
  poller = setInterval(() => {
    if (main.contains(summary)) refresh().catch(problem);
    else stopPolling();
  }, POLL_MS);
}

// --- routing ------------------------------------------------------------------------------------

async function route() {
  renderSessionBar();
  if (!currentSession()) return signInView();
  const hash = location.hash.replace(/^#/, '') || '/';
  const m = /^\/w\/([^/]+)(\/edit)?$/.exec(hash);
  try {
    if (await usersRoute(hash, { show, say, problem, ask, scrollTable })) return;
    if (hash === '/new') await formView(null);
    else if (m) await (m[2] ? formView(decodeURIComponent(m[1])) : detailView(decodeURIComponent(m[1])));
    else await listView();
  } catch (err) {
    problem(err);
  }
}

window.addEventListener('hashchange', () => {
  say('');
  void route();
});
void route();
