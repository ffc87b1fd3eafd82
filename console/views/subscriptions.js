import { call, callApi, enc } from '../api.js';
import { h } from '../dom.js';
import { badge, scrollTable, stateOf, target, time } from '../format.js';
import { go, registerNav, registerRoute } from '../routing.js';
import { problem, say, show } from '../shell.js';

// The environment's subscriptions, each with its state, in one request; and the search for an
// event's deliveries across all of them (by the payload's `id`, the `webhook-id` header).

function searchForm(value = '') {
  const input = h('input', {
    id: 'event-search',
    name: 'event',
    value,
    required: true,
    autocomplete: 'off',
    placeholder: 'evt_…',
    'aria-describedby': 'event-search-help',
  });
  return h(
    'form',
    {
      class: 'search',
      role: 'search',
      onsubmit: (e) => {
        e.preventDefault();
        go(`#/events/${enc(input.value.trim())}`);
      },
    },
    h('label', { for: 'event-search' }, 'Find an event'),
    h('div', { class: 'inline' }, input, h('button', { type: 'submit', class: 'secondary' }, 'Search')),
    h('p', { id: 'event-search-help', class: 'help' }, "The payload's id, also sent as the webhook-id header."),
  );
}

async function listView() {
  const loading = h('p', {}, 'Loading…');
  const live = show('Subscriptions', h('p', {}, h('a', { href: '#/new', class: 'button' }, 'New subscription')), searchForm(), loading);
  const [{ webhooks }, gaps] = await Promise.all([
    call('GET', '?limit=100'),
    callApi('GET', '/api/rest/_gaps?open=true').catch(() => ({ gaps: [] })),
  ]);
  if (!live()) return;
  if (gaps.gaps.length) loading.before(gapBanner(gaps.gaps));
  const rows = webhooks.map((w) =>
    h(
      'tr',
      {},
      h('td', {}, h('a', { href: `#/w/${enc(w.id)}` }, w.table)),
      h('td', {}, w.events.join(', ')),
      h('td', { class: 'url' }, target(w)),
      h('td', {}, badge(stateOf(w, w.breaker))),
    ),
  );
  loading.replaceWith(
    webhooks.length
      ? scrollTable('Subscriptions', ['Table', 'Events', 'URL', 'State'], rows)
      : h('p', {}, 'No subscription in this environment yet.'),
  );
}

/** Open capture gaps: changes that were never captured, until acknowledged. */
function gapBanner(gaps) {
  const banner = h(
    'section',
    { class: 'banner', role: 'alert', id: 'gap-banner' },
    h('strong', {}, `Changes were lost: ${gaps.length} capture gap${gaps.length > 1 ? 's' : ''}.`),
    ...gaps.map((g) =>
      g.reason === 'position_rewound'
        ? h(
            'p',
            {},
            `The database went back to an earlier WAL position (a restore, or a failover to a standby that was behind): changes delivered between ${g.fromLsn} and ${g.toLsn} are gone from it, and new changes there may reuse their event ids (${g.webhookIds.length} subscription${g.webhookIds.length === 1 ? '' : 's'}).`,
          )
        : h(
            'p',
            {},
            `${g.reason === 'slot_lost' ? 'The replication slot lost WAL' : 'The replication slot was missing'}: changes from `,
            time(g.fromTime),
            ' to ',
            time(g.toTime),
            ` (${g.webhookIds.length} subscription${g.webhookIds.length === 1 ? '' : 's'}) were not captured.`,
          ),
    ),
    h(
      'p',
      { class: 'inline' },
      h('button', { type: 'button', onclick: () => void backfill(), 'aria-describedby': 'gap-backfill-help' }, 'Backfill'),
      h('button', { type: 'button', class: 'secondary', onclick: () => void acknowledge() }, 'Acknowledge'),
    ),
    h(
      'p',
      { id: 'gap-backfill-help', class: 'help' },
      'Backfill delivers the current rows of every affected table again (as READ events) to the subscriptions that missed changes; acknowledge once they have caught up.',
    ),
  );
  async function backfill() {
    try {
      let started = 0;
      for (const g of gaps) started += (await callApi('POST', `/api/rest/_gaps/${enc(g.id)}/backfill`)).backfills.length;
      say(`Backfill started for ${started} subscription${started === 1 ? '' : 's'}.`);
    } catch (err) {
      problem(err);
    }
  }
  async function acknowledge() {
    try {
      for (const g of gaps) await callApi('POST', `/api/rest/_gaps/${enc(g.id)}/acknowledge`);
      banner.remove();
      say('Gaps acknowledged.');
    } catch (err) {
      problem(err);
    }
  }
  return banner;
}

async function eventView(eventId) {
  const loading = h('p', {}, 'Loading…');
  const live = show('Event deliveries', h('p', {}, h('a', { href: '#/' }, '← All subscriptions')), searchForm(eventId), loading);
  const { deliveries } = await call('GET', `/_deliveries?${new URLSearchParams({ eventId })}`);
  if (!live()) return;
  const rows = deliveries.map((d) =>
    h(
      'tr',
      {},
      h('td', {}, h('a', { href: `#/w/${enc(d.webhookId)}/d/${enc(d.id)}` }, d.table)),
      h('td', { class: 'url' }, d.url),
      h('td', {}, d.event),
      h('td', {}, badge([d.status, d.status])),
      h('td', {}, String(d.attempts)),
      h('td', {}, time(d.createdAt)),
    ),
  );
  loading.replaceWith(
    deliveries.length
      ? scrollTable(`Deliveries of ${eventId}`, ['Subscription', 'URL', 'Event', 'Status', 'Attempts', 'Created'], rows)
      : h('p', { class: 'empty' }, `No delivery of ${eventId} in this environment.`),
  );
}

registerRoute(/^\/$/, listView);
registerRoute(/^\/events\/([^/]+)$/, eventView);
registerNav('Subscriptions', '#/');
