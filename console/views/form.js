import { ApiError, call, currentSession, enc } from '../api.js';
import { h } from '../dom.js';
import { go, registerRoute } from '../routing.js';
import { notFound, problem, say, show } from '../shell.js';
import { generateSecret, secretOnce } from './secret.js';

// Creating and editing a subscription: table, events, URL, filter, columns, ordering, history and custom
// request headers. Header values are typed into password fields and sent once; the API never
// returns them, so editing shows the names and replaces the whole set only when asked to.

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

let n = 0;

/** A removable row of two labelled fields (a filter condition, a custom header), appended to `box`. */
function pairRow(box, [firstLabel, first], [secondLabel, second]) {
  const row = h(
    'div',
    { class: 'filter-row' },
    h('label', { for: first.id }, firstLabel),
    first,
    h('label', { for: second.id }, secondLabel),
    second,
    h('button', { type: 'button', class: 'secondary', onclick: () => row.remove() }, 'Remove'),
  );
  box.append(row);
  first.focus();
}

/** Name/value rows; `collect()` gives the object to send. */
function headerEditor() {
  const rows = h('div', { id: 'header-rows' });
  function add() {
    const i = n++;
    const name = h('input', { id: `header-name-${i}`, class: 'header-name', autocomplete: 'off', placeholder: 'X-Api-Key' });
    const value = h('input', { id: `header-value-${i}`, class: 'header-value', type: 'password', autocomplete: 'new-password' });
    pairRow(rows, ['Name', name], ['Value', value]);
  }
  const collect = () => {
    const out = {};
    for (const row of rows.querySelectorAll('.filter-row')) {
      const name = row.querySelector('.header-name').value.trim();
      if (name) out[name] = row.querySelector('.header-value').value;
    }
    return out;
  };
  return { rows, add, collect };
}

async function formView(id) {
  const loading = h('p', {}, 'Loading…');
  const live = show(id ? 'Edit subscription' : 'New subscription', loading);
  let tables;
  let w;
  try {
    [{ tables }, w] = await Promise.all([call('GET', '/_tables'), id ? call('GET', `/${enc(id)}`).then((r) => r.webhook) : null]);
  } catch (err) {
    if (err instanceof ApiError && err.code === 'WEBHOOK_NOT_FOUND')
      return notFound('Subscription not found', `There is no subscription ${id} in this environment.`);
    throw err;
  }
  if (!live()) return;
  if (!tables.length) {
    loading.replaceWith(h('p', {}, 'This environment has no table yet: create one in its Postgres schema first.'));
    return;
  }
  const table = h(
    'select',
    { id: 'table', name: 'table', required: true },
    tables.map((t) => h('option', { value: t.name, selected: t.name === w?.table }, t.name)),
  );
  const events = ['INSERT', 'UPDATE', 'DELETE'].map((e) =>
    h('input', { type: 'checkbox', id: `event-${e}`, value: e, checked: w ? w.events.includes(e) : true }),
  );
  const url = h('input', {
    id: 'url',
    name: 'url',
    type: 'url',
    required: true,
    placeholder: 'https://example.com/hooks',
    value: w?.url ?? '',
  });
  const active = h('input', { type: 'checkbox', id: 'active', checked: w ? w.active : true });
  const rowOrdered = h('input', { type: 'checkbox', id: 'ordering', checked: w?.ordering === 'row' });
  const failuresOnly = h('input', { type: 'checkbox', id: 'history', checked: w?.history === 'failures' });
  const filterRows = h('div', { id: 'filter-rows' });
  const selectBox = h('div', { id: 'select-columns', class: 'checks' });
  const headers = headerEditor();
  const replaceHeaders = h('input', { type: 'checkbox', id: 'replace-headers', checked: !w });
  const columns = () => tables.find((t) => t.name === table.value)?.columns ?? [];

  function addFilterRow(column, value) {
    const i = n++;
    const col = h(
      'select',
      { id: `filter-col-${i}`, class: 'filter-col' },
      columns().map((c) => h('option', { value: c.name, selected: c.name === column }, c.name)),
    );
    const val = h('input', {
      id: `filter-val-${i}`,
      class: 'filter-val',
      value: value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value),
    });
    pairRow(filterRows, ['Column', col], ['equals', val]);
  }
  function renderColumns(selected) {
    filterRows.replaceChildren();
    selectBox.replaceChildren(
      ...columns().map((c) =>
        h(
          'label',
          { class: 'check' },
          h('input', { type: 'checkbox', value: c.name, checked: selected?.includes(c.name) }),
          ` ${c.name} `,
          h('small', {}, c.type),
        ),
      ),
    );
  }
  table.addEventListener('change', () => renderColumns(null));
  renderColumns(w?.select);
  for (const [k, v] of Object.entries(w?.filter ?? {})) addFilterRow(k, v);

  async function submit(e) {
    e.preventDefault();
    const filter = {};
    for (const row of filterRows.querySelectorAll('.filter-row'))
      filter[row.querySelector('.filter-col').value] = filterValue(row.querySelector('.filter-val').value);
    const picked = [...selectBox.querySelectorAll('input:checked')].map((c) => c.value);
    const ordering = rowOrdered.checked ? 'row' : 'none';
    const history = failuresOnly.checked ? 'failures' : 'full';
    const sent = headers.collect();
    const body = {
      table: table.value,
      events: events.filter((c) => c.checked).map((c) => c.value),
      url: url.value.trim(),
      active: active.checked,
      filter: Object.keys(filter).length ? filter : null,
      select: picked.length ? picked : null,
      // Sent when it changes: a PATCH that names "row" re-checks the table's primary key.
      ...(w && w.ordering === ordering ? {} : { ordering }),
      ...(w && w.history === history ? {} : { history }),
      ...(replaceHeaders.checked && (w || Object.keys(sent).length) ? { headers: sent } : {}),
    };
    try {
      if (id) {
        await call('PATCH', `/${enc(id)}`, body);
        say('Subscription saved.');
        go(`#/w/${enc(id)}`);
      } else {
        const s = currentSession();
        const secret = generateSecret();
        const { webhook } = await call('POST', '', { ...body, projectId: s.projectId, environment: s.environment, secret });
        say('Subscription created.');
        show(
          'Subscription created',
          secretOnce(
            secret,
            'Give this secret to the receiver now, to verify signatures: walgate keeps it encrypted and never shows it again.',
            say,
          ),
          h('p', {}, 'Its id, for the CLI: ', h('code', { id: 'webhook-id' }, webhook.id)),
          h('p', {}, h('a', { href: `#/w/${enc(webhook.id)}`, class: 'button' }, 'Open the subscription')),
        );
      }
    } catch (err) {
      problem(err);
    }
  }

  const form = h(
    'form',
    { class: 'card', onsubmit: submit },
    h('label', { for: 'table' }, 'Table'),
    table,
    h(
      'fieldset',
      {},
      h('legend', {}, 'Events'),
      h(
        'div',
        { class: 'checks' },
        events.map((c) => h('label', { class: 'check', for: c.id }, c, ` ${c.value}`)),
      ),
    ),
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
    h(
      'fieldset',
      {},
      h('legend', {}, 'Custom request headers'),
      w ? h('p', { class: 'help' }, w.headers.length ? `Now: ${w.headers.join(', ')} (values are never shown).` : 'Now: none.') : null,
      w ? h('label', { class: 'check', for: 'replace-headers' }, replaceHeaders, ' Replace them with the ones below') : null,
      headers.rows,
      h('button', { type: 'button', class: 'secondary', onclick: () => headers.add() }, 'Add a header'),
      h('p', { class: 'help' }, 'Sent on every attempt, up to 10. Values are stored encrypted and never shown again.'),
    ),
    h('label', { class: 'check', for: 'active' }, active, ' Active (unchecked: paused)'),
    h(
      'label',
      { class: 'check', for: 'ordering' },
      rowOrdered,
      " Row ordering: a row's changes one at a time, in commit order (needs a primary key)",
    ),
    h(
      'label',
      { class: 'check', for: 'history' },
      failuresOnly,
      ' History of failures only: changes delivered at their first attempt are counted, not listed in the delivery log',
    ),
    id ? null : h('p', { class: 'help' }, 'A whsec_ signing secret is generated when you create the subscription and shown once.'),
    h(
      'div',
      { class: 'actions' },
      h('a', { href: id ? `#/w/${enc(id)}` : '#/', class: 'button secondary' }, 'Cancel'),
      h('button', { type: 'submit' }, id ? 'Save' : 'Create'),
    ),
  );
  loading.replaceWith(form);
}

registerRoute(/^\/new$/, () => formView(null));
registerRoute(/^\/w\/([^/]+)\/edit$/, formView);
