import { ApiError, call, callApi, currentSession, enc } from '../api.js';
import { h } from '../dom.js';
import { go, registerRoute } from '../routing.js';
import { notFound, problem, say, show } from '../shell.js';
import { generateSecret, secretOnce } from './secret.js';
import { targetFields } from './target.js';

// Creating and editing a subscription: table, events, URL or broker destination (target.js), filter, columns, ordering, history, batching and custom
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

/** The operators a filter row offers (docs/filters.md); `$path`, `$or`, `$not` and `$old` are written as JSON. */
const OPERATORS = [
  ['$eq', 'equals'],
  ['$ne', 'does not equal'],
  ['$lt', 'is below'],
  ['$lte', 'is at most'],
  ['$gt', 'is above'],
  ['$gte', 'is at least'],
  ['$in', 'is one of (comma-separated)'],
  ['$nin', 'is none of (comma-separated)'],
  ['$startsWith', 'starts with'],
  ['null', 'is null'],
  ['notNull', 'is not null'],
  ['$changed', 'changed (UPDATE)'],
  ['$changedFrom', 'changed from (UPDATE)'],
  ['$changedTo', 'changed to (UPDATE)'],
];
const LISTS = new Set(['$in', '$nin']);
const NO_VALUE = new Set(['null', 'notNull', '$changed']);

/** The filter document of the rows: bare values for equality, operators merged per column, $changed as one list. */
function documentOfRows(rows) {
  const doc = {};
  const changed = [];
  const operators = (column) => {
    const now = doc[column];
    if (now === undefined || now === null || typeof now !== 'object') doc[column] = now === undefined ? {} : { $eq: now };
    return doc[column];
  };
  for (const { column, op, text } of rows) {
    if (op === '$changed') changed.push(column);
    else if (op === 'null' || op === 'notNull') operators(column).$isNull = op === 'null';
    else if (LISTS.has(op)) operators(column)[op] = text.split(',').map((v) => filterValue(v.trim()));
    else if (op === '$eq' && doc[column] === undefined) doc[column] = filterValue(text);
    else operators(column)[op] = filterValue(text);
  }
  if (changed.length) doc.$changed = changed;
  return doc;
}

/** The rows a filter document is made of, or null when it needs JSON ($or, $not, $old, $path …). */
function rowsOfDocument(doc) {
  const rows = [];
  for (const [key, value] of Object.entries(doc ?? {})) {
    if (key === '$changed' && Array.isArray(value) && value.every((c) => typeof c === 'string')) {
      rows.push(...value.map((column) => ({ column, op: '$changed' })));
    } else if (key.startsWith('$')) return null;
    else if (value === null || typeof value !== 'object') rows.push({ column: key, op: '$eq', value });
    else if (Array.isArray(value) || '$path' in value) return null;
    else {
      for (const [op, v] of Object.entries(value)) {
        if (op === '$isNull') rows.push({ column: key, op: v ? 'null' : 'notNull' });
        else if (LISTS.has(op) && Array.isArray(v))
          rows.push({ column: key, op, value: v.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join(', ') });
        else if (OPERATORS.some(([o]) => o === op)) rows.push({ column: key, op, value: v });
        else return null;
      }
    }
  }
  return rows;
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
  let destinations;
  try {
    [{ tables }, w, { destinations }] = await Promise.all([
      call('GET', '/_tables'),
      id ? call('GET', `/${enc(id)}`).then((r) => r.webhook) : null,
      callApi('GET', '/api/rest/_destinations?limit=100'),
    ]);
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
  const target = targetFields(w, destinations);
  const active = h('input', { type: 'checkbox', id: 'active', checked: w ? w.active : true });
  // Ordering: none, per row, or per group of columns (`{by: [...]}`, typed in, in the order that
  // makes the group: the API checks them against the table and says which one is wrong).
  const group = w && typeof w.ordering === 'object' ? w.ordering.by : null;
  const unordered = h('input', { type: 'radio', name: 'ordering', id: 'ordering-none', checked: !w?.ordering || w.ordering === 'none' });
  const rowOrdered = h('input', { type: 'radio', name: 'ordering', id: 'ordering', checked: w?.ordering === 'row' });
  const groupOrdered = h('input', { type: 'radio', name: 'ordering', id: 'ordering-group', checked: !!group });
  const groupColumns = h('input', {
    id: 'ordering-by',
    'aria-label': 'Group columns',
    placeholder: 'account_id',
    value: group ? group.join(', ') : '',
    oninput: () => (groupOrdered.checked = true),
  });
  const failuresOnly = h('input', { type: 'checkbox', id: 'history', checked: w?.history === 'failures' });
  // Changes per request (batch.maxEvents): 1 is off. The wait and byte bounds keep what they are (defaults on create).
  const batchSize = h('input', {
    type: 'number',
    id: 'batch-max-events',
    min: '1',
    max: '1000',
    step: '1',
    value: String(w?.batch?.maxEvents ?? 1),
  });
  // The throttle: requests a second at most; empty for none.
  const rate = h('input', {
    type: 'number',
    id: 'rate-limit',
    min: '0.01',
    step: 'any',
    placeholder: 'no limit',
    value: w?.rateLimit ? String(w.rateLimit.perSecond) : '',
  });
  // The retry schedule: waits in ms, comma-separated; empty for the environment's default.
  const retry = h('input', { id: 'retry', placeholder: "the environment's default", value: w?.retry ? w.retry.delaysMs.join(', ') : '' });
  const filterRows = h('div', { id: 'filter-rows' });
  const selectBox = h('div', { id: 'select-columns', class: 'checks' });
  const headers = headerEditor();
  const replaceHeaders = h('input', { type: 'checkbox', id: 'replace-headers', checked: !w });
  const columns = () => tables.find((t) => t.name === table.value)?.columns ?? [];

  function addFilterRow(column, value, op = '$eq') {
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
    const operator = h(
      'select',
      { id: `filter-op-${i}`, class: 'filter-op', 'aria-label': 'Operator' },
      OPERATORS.map(([o, text]) => h('option', { value: o, selected: o === op }, text)),
    );
    const toggle = () => (val.hidden = NO_VALUE.has(operator.value));
    operator.addEventListener('change', toggle);
    toggle();
    pairRow(filterRows, ['Column', col], ['compared with', val]);
    col.after(operator);
  }
  // A filter the rows cannot show ($or, $not, $old, $path …) is edited as JSON.
  const filterJson = h('textarea', {
    id: 'filter-json',
    'aria-label': 'Filter as JSON',
    rows: 4,
    spellcheck: false,
    placeholder: '{"$or": [{"status": "paid"}, {"total": {"$gt": 100}}]}',
  });
  const asJson = h('input', { type: 'checkbox', id: 'filter-as-json' });
  const showJson = () => {
    filterJson.hidden = !asJson.checked;
    filterRows.hidden = asJson.checked;
  };
  asJson.addEventListener('change', () => {
    // Switching to JSON starts from what the rows say.
    if (asJson.checked && !filterJson.value.trim()) filterJson.value = JSON.stringify(documentOfRows(readRows()), null, 1);
    showJson();
  });
  const readRows = () =>
    [...filterRows.querySelectorAll('.filter-row')].map((row) => ({
      column: row.querySelector('.filter-col').value,
      op: row.querySelector('.filter-op').value,
      text: row.querySelector('.filter-val').value,
    }));
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
  const initialRows = rowsOfDocument(w?.filter);
  if (initialRows) for (const r of initialRows) addFilterRow(r.column, r.value, r.op);
  else {
    asJson.checked = true;
    filterJson.value = JSON.stringify(w.filter, null, 1);
  }
  showJson();

  async function submit(e) {
    e.preventDefault();
    let filter;
    if (asJson.checked && filterJson.value.trim()) {
      try {
        filter = JSON.parse(filterJson.value);
      } catch {
        say('The filter is not valid JSON.');
        filterJson.focus();
        return;
      }
    } else filter = asJson.checked ? {} : documentOfRows(readRows());
    const picked = [...selectBox.querySelectorAll('input:checked')].map((c) => c.value);
    const ordering = rowOrdered.checked
      ? 'row'
      : groupOrdered.checked
        ? {
            by: groupColumns.value
              .split(',')
              .map((c) => c.trim())
              .filter(Boolean),
          }
        : 'none';
    const history = failuresOnly.checked ? 'failures' : 'full';
    // Sent as typed (a value out of range comes back as a 400 naming batch.maxEvents); the other bounds kept.
    const maxEvents = Number(batchSize.value);
    const batch = { ...(w?.batch ?? {}), maxEvents };
    const delays = retry.value.trim() ? retry.value.split(',').map((v) => Number(v.trim())) : null;
    const sent = headers.collect();
    const body = {
      table: table.value,
      events: events.filter((c) => c.checked).map((c) => c.value),
      ...target.value(),
      active: active.checked,
      filter: filter !== null && typeof filter === 'object' && !Array.isArray(filter) && !Object.keys(filter).length ? null : filter,
      select: picked.length ? picked : null,
      // Sent when it changes: a PATCH that names "row" re-checks the table's primary key.
      ...(w && JSON.stringify(w.ordering) === JSON.stringify(ordering) ? {} : { ordering }),
      ...(w && w.history === history ? {} : { history }),
      ...((w ? w.batch?.maxEvents === maxEvents : maxEvents === 1) ? {} : { batch }),
      retry: delays ? { delaysMs: delays } : null,
      // The burst is kept as it was (it is set through the API); a new throttle takes the default.
      rateLimit: rate.value.trim() ? { perSecond: Number(rate.value), ...(w?.rateLimit ? { burst: w.rateLimit.burst } : {}) } : null,
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
    target.element,
    h(
      'fieldset',
      {},
      h('legend', {}, 'Filter (all must match)'),
      filterRows,
      h(
        'button',
        { type: 'button', class: 'secondary', onclick: () => (asJson.checked ? filterJson.focus() : addFilterRow()) },
        'Add a condition',
      ),
      h('label', { class: 'check', for: 'filter-as-json' }, asJson, ' Write the filter as JSON ($or, $not, $old, $path …)'),
      filterJson,
      h(
        'p',
        { class: 'help' },
        'Numbers, true, false and null are compared as such; quote a value ("42") to compare it as text. Values compare by the column’s type: numbers exactly, timestamps as instants (write an offset: 2026-01-01T00:00:00Z).',
      ),
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
      'fieldset',
      {},
      h('legend', {}, 'Ordering'),
      h('label', { class: 'check', for: 'ordering-none' }, unordered, ' None: changes go out in parallel, in no promised order'),
      h(
        'label',
        { class: 'check', for: 'ordering' },
        rowOrdered,
        " Row ordering: a row's changes one at a time, in commit order (needs a primary key)",
      ),
      h(
        'label',
        { class: 'check', for: 'ordering-group' },
        groupOrdered,
        ' Group ordering: the changes that agree on these columns one at a time, in commit order (e.g. one account)',
      ),
      groupColumns,
      h('p', { class: 'help' }, 'Group columns: 1 to 8, comma-separated. A NULL value is a group of its own.'),
    ),
    h(
      'label',
      { class: 'check', for: 'history' },
      failuresOnly,
      ' History of failures only: changes delivered at their first attempt are counted, not listed in the delivery log',
    ),
    h('label', { for: 'batch-max-events' }, 'Changes per request (batching; 1 = off, up to 1000)'),
    batchSize,
    h('label', { for: 'rate-limit' }, 'Requests per second at most (throttle; empty: none)', rate),
    h('label', { for: 'retry' }, 'Retry schedule (ms before each attempt, the first 0)', retry),
    h('p', { class: 'help' }, 'For example 0, 1000, 5000: three attempts, then dead. Empty: the environment’s default.'),
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
