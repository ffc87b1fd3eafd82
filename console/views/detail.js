import { ApiError, call, enc } from '../api.js';
import { minuteChart } from '../chart.js';
import { h } from '../dom.js';
import { badge, millis, percent, scrollTable, stateOf, target, time } from '../format.js';
import { go, registerRoute } from '../routing.js';
import { ask, notFound, poll, problem, say, show } from '../shell.js';
import { openDelivery } from './delivery.js';
import { generateSecret, secretOnce } from './secret.js';

// One subscription: its settings and state, endpoint health (24 hours, 7 days, the last hour per
// minute), its deliveries with filters, replay, test send, rotate, pause and delete. The list and
// the summary refresh while the tab is visible; the open delivery stays as it is until reloaded.

const HEALTH_EVERY = 15;

function healthTable(windows) {
  const rows = windows.map((w) =>
    h(
      'tr',
      {},
      h('th', { scope: 'row' }, w.window === '24h' ? 'Last 24 hours' : 'Last 7 days'),
      h('td', {}, String(w.delivered)),
      h('td', {}, String(w.dead)),
      h('td', {}, percent(w.successRate)),
      h('td', {}, String(w.attemptsFailed)),
      h('td', {}, millis(w.latencyP50Ms)),
      h('td', {}, millis(w.latencyP95Ms)),
    ),
  );
  return scrollTable('Endpoint health', ['', 'Delivered', 'Dead', 'Attempts OK', 'Failed attempts', 'p50', 'p95'], rows);
}

async function detailView(id, deliveryId) {
  const path = `/${enc(id)}`;
  let got;
  try {
    got = await call('GET', path);
  } catch (err) {
    if (err instanceof ApiError && err.code === 'WEBHOOK_NOT_FOUND')
      return notFound('Subscription not found', `There is no subscription ${id} in this environment.`);
    throw err;
  }
  const summary = h('section', { id: 'summary', 'aria-label': 'Subscription' });
  const actions = h('div', { class: 'actions', id: 'actions' });
  const secretSlot = h('div', { id: 'secret-slot' });
  const health = h('section', { id: 'health', 'aria-labelledby': 'health-title' }, h('h3', { id: 'health-title' }, 'Endpoint health'));
  const status = h(
    'select',
    { id: 'f-status' },
    h('option', { value: '' }, 'any'),
    ['pending', 'retrying', 'delivered', 'dead'].map((s) => h('option', { value: s }, s)),
  );
  const since = h('input', { id: 'f-since', type: 'datetime-local' });
  const until = h('input', { id: 'f-until', type: 'datetime-local' });
  const list = h('div', { id: 'deliveries' });
  const more = h('div', { id: 'more' });
  const detail = h('section', { id: 'delivery', 'aria-live': 'polite' });
  let webhook = got.webhook;
  let breaker = got.health.breaker;
  let nextCursor = null;
  let pagesShown = 1;
  let openId = null;

  const range = () => ({
    ...(since.value ? { since: new Date(since.value).toISOString() } : {}),
    ...(until.value ? { until: new Date(until.value).toISOString() } : {}),
  });
  const query = (cursor) => {
    const q = new URLSearchParams({ limit: '25', ...range() });
    if (status.value) q.set('status', status.value);
    if (cursor) q.set('cursor', cursor);
    return `${path}/deliveries?${q}`;
  };
  const currentBreaker = async () => (await call('GET', path)).health.breaker;
  const open = (did) => {
    openId = did;
    return openDelivery(detail, path, did, currentBreaker);
  };

  function deliveryRow(d) {
    return h(
      'tr',
      { 'data-id': d.id },
      h('td', {}, time(d.createdAt)),
      h('td', {}, d.event),
      h('td', {}, badge([d.status, d.status]), d.holdsRow ? ' holds its row' : ''),
      h('td', {}, d.httpStatus ?? '—'),
      h('td', {}, String(d.attempts)),
      h('td', { class: 'error' }, d.lastError ?? ''),
      h(
        'td',
        {},
        h(
          'button',
          {
            type: 'button',
            class: 'secondary open',
            'data-id': d.id,
            'aria-label': `Details of the ${d.event} delivery created ${new Date(d.createdAt).toLocaleString()}`,
            onclick: () => open(d.id),
          },
          'Details',
        ),
      ),
    );
  }

  // What the log cannot show (history "failures"), said above it, from the list's own answer.
  const notice = h('p', { id: 'not-listed', class: 'help' });
  function renderNotice(page) {
    notice.replaceChildren(page.notListed ?? '');
    notice.hidden = !page.notListed;
  }

  function renderDeliveries(deliveries, append) {
    const rows = deliveries.map(deliveryRow);
    const tbody = list.querySelector('tbody');
    if (append && tbody) tbody.append(...rows);
    else {
      // Polling re-renders the list: the focused button keeps the focus.
      const focused = document.activeElement?.closest?.('#deliveries') ? document.activeElement.getAttribute('data-id') : null;
      list.replaceChildren(
        deliveries.length
          ? scrollTable('Deliveries', ['Created', 'Event', 'Status', 'HTTP', 'Attempts', 'Last error', ''], rows)
          : h('p', {}, 'No delivery matches.'),
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
    renderNotice(page);
    renderDeliveries(page.deliveries, false);
  }

  function renderSummary(h2) {
    webhook = h2.webhook;
    breaker = h2.health.breaker;
    const hl = h2.health;
    summary.replaceChildren(
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'State'),
        h('dd', { id: 'state' }, badge(stateOf(webhook, breaker, hl.disabledReason))),
        webhook.problems?.length
          ? [
              h('dt', {}, 'Problems'),
              h(
                'dd',
                { id: 'problems' },
                webhook.problems.map((p) => h('p', {}, badge(['problem', p.code]), ' ', p.message, ' — since ', time(p.since))),
              ),
            ]
          : null,
        h('dt', {}, 'Id'),
        h('dd', {}, h('code', { id: 'webhook-id' }, webhook.id)),
        h('dt', {}, 'Table'),
        h('dd', {}, webhook.table),
        h('dt', {}, 'Events'),
        h('dd', {}, webhook.events.join(', ')),
        h('dt', {}, 'URL'),
        h('dd', { class: 'url' }, target(webhook)),
        h('dt', {}, 'Filter'),
        h('dd', {}, webhook.filter ? JSON.stringify(webhook.filter) : 'none'),
        h('dt', {}, 'Columns'),
        h('dd', {}, webhook.select ? webhook.select.join(', ') : 'all'),
        h('dt', {}, 'Ordering'),
        h('dd', { id: 'ordering-mode' }, orderingText(webhook.ordering)),
        h('dt', {}, 'History'),
        h(
          'dd',
          { id: 'history-mode' },
          webhook.history === 'failures'
            ? 'failures only: changes delivered at their first attempt are counted, not listed'
            : 'full: every delivery is listed',
        ),
        h('dt', {}, 'Batching'),
        h(
          'dd',
          { id: 'batch-mode' },
          webhook.batch && webhook.batch.maxEvents > 1
            ? `up to ${webhook.batch.maxEvents} changes per request, waiting at most ${webhook.batch.maxWaitMs} ms`
            : 'off: one request per change',
        ),
        h('dt', {}, 'Throttle'),
        h(
          'dd',
          { id: 'rate-limit' },
          webhook.rateLimit ? `at most ${webhook.rateLimit.perSecond} requests a second (burst ${webhook.rateLimit.burst})` : 'none',
        ),
        h('dt', {}, 'Retry schedule'),
        h('dd', { id: 'retry-schedule' }, webhook.retry ? `${webhook.retry.delaysMs.join(', ')} ms` : 'the environment’s default'),
        h('dt', {}, 'Custom headers'),
        h('dd', { id: 'custom-headers' }, webhook.headers.length ? webhook.headers.join(', ') : 'none'),
        h('dt', {}, 'Breaker'),
        h(
          'dd',
          {},
          breaker.state === 'open' ? ['open until ', time(breaker.openUntil)] : breaker.state,
          breaker.consecutiveFailures ? ` (${breaker.consecutiveFailures} consecutive failures)` : '',
        ),
        hl.disabledReason ? [h('dt', {}, 'Disabled'), h('dd', {}, hl.disabledReason, ' — ', time(hl.disabledAt))] : null,
        h('dt', {}, 'Last success'),
        h('dd', {}, time(hl.lastSuccessAt)),
        h('dt', {}, 'Failures, last hour'),
        h('dd', { id: 'failures' }, String(hl.failuresLastHour)),
        webhook.rateLimit || hl.throttledLastHour
          ? [
              h('dt', {}, 'Throttled, last hour'),
              h(
                'dd',
                { id: 'throttled' },
                `${hl.throttledLastHour} requests waited for their turn (${(hl.throttledMsLastHour / 1000).toFixed(1)} s in all)`,
              ),
            ]
          : null,
      ),
    );
    actions.replaceChildren(
      h('button', { type: 'button', id: 'toggle-active', onclick: toggleActive }, webhook.active ? 'Pause' : 'Resume'),
      h('button', { type: 'button', id: 'test-send', class: 'secondary', onclick: testSend }, 'Send a test event'),
      h('button', { type: 'button', id: 'rotate', class: 'secondary', onclick: rotate }, 'Rotate secret'),
      h('a', { href: `#/w/${enc(id)}/edit`, class: 'button secondary' }, 'Edit'),
      h('button', { type: 'button', id: 'delete', class: 'danger', onclick: remove }, 'Delete'),
    );
  }

  // The 24-hour and 7-day figures read a week of history: asked once, then every HEALTH_EVERY polls.
  let healthWindows = null;
  let polls = 0;
  async function refreshSummary() {
    const askHealth = healthWindows === null || polls++ % HEALTH_EVERY === 0;
    const [fresh, { minutes }, windows] = await Promise.all([
      call('GET', path),
      call('GET', `${path}/minutes`),
      askHealth ? call('GET', `${path}/health`).then((r) => r.windows) : healthWindows,
    ]);
    healthWindows = windows;
    renderSummary(fresh);
    health.replaceChildren(health.firstChild, healthTable(windows), minuteChart(minutes));
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

  async function testSend() {
    try {
      const { delivery } = await call('POST', `${path}/test`);
      say(
        webhook.active
          ? `Test event ${delivery.eventId} queued.`
          : `Test event ${delivery.eventId} queued: it goes when the subscription is resumed.`,
      );
      await refreshDeliveries();
    } catch (err) {
      problem(err);
    }
  }

  async function rotate() {
    if (
      !(await ask(
        'Rotate the signing secret? The current one keeps signing alongside the new one for the grace period (WEBHOOK_SECRET_GRACE_MS).',
        'Rotate',
      ))
    )
      return;
    const secret = generateSecret();
    try {
      await call('PATCH', path, { secret });
      secretSlot.replaceChildren(
        secretOnce(secret, 'The new secret. Add it to the receiver, which may accept both until the old one stops signing.', say),
      );
      say('Secret rotated.');
      secretSlot.querySelector('button')?.focus();
    } catch (err) {
      problem(err);
    }
  }

  let poller = null;
  async function remove() {
    if (!(await ask(`Delete the subscription on ${webhook.table} → ${target(webhook)}? Its deliveries go with it.`, 'Delete', true)))
      return;
    // No poll of what is being deleted may still be out when it is gone.
    await poller?.stop();
    try {
      await call('DELETE', path);
      say('Subscription deleted.');
      go('#/');
    } catch (err) {
      problem(err);
      if (live()) poller = poll(live, refresh);
    }
  }

  async function replay() {
    try {
      await refreshSummary();
      if (!webhook.active) {
        // A paused or disabled subscription is not delivered to: replayed letters would sit pending.
        say(`Not replayed: the subscription is ${webhook.disabledReason ? 'disabled' : 'paused'}. Resume it first, then replay.`, 'error');
        return;
      }
      const r = range();
      const { replayed: count } = await call('POST', `${path}/replay`, { ...r, dryRun: true });
      const within = r.since || r.until ? ' in the chosen time range' : '';
      if (count === 0) {
        say(`There is no dead letter to replay${within}.`);
        return;
      }
      if (
        !(await ask(
          `Replay ${count} dead deliver${count === 1 ? 'y' : 'ies'}${within}? They are sent again with a fresh set of attempts.`,
          'Replay',
        ))
      )
        return;
      const { replayed, replay: job } = await call('POST', `${path}/replay`, r);
      // A large replay runs in the background: what it will do, not the none it has done yet.
      if (job?.state === 'running') say(`Replaying ${job.count} dead deliveries in the background.`);
      else say(`Replayed ${replayed} dead deliver${replayed === 1 ? 'y' : 'ies'}.`);
      await refreshDeliveries();
      if (openId) await open(openId);
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
    // Not the page's main action (most subscriptions have no dead letter): a secondary button.
    h('button', { type: 'button', id: 'replay', class: 'secondary', onclick: replay }, 'Replay dead letters…'),
  );

  const live = show(
    'Subscription',
    h('p', {}, h('a', { href: '#/' }, '← All subscriptions')),
    summary,
    actions,
    secretSlot,
    health,
    h('section', { 'aria-labelledby': 'deliveries-title' }, h('h3', { id: 'deliveries-title' }, 'Deliveries'), filters, notice, list, more),
    detail,
  );
  renderSummary(got);
  await refresh();
  if (!live()) return;
  if (deliveryId) await open(deliveryId);
  // New deliveries appear without a reload; the first page only, so paging back is left alone.
  poller = poll(live, refresh);
}

registerRoute(/^\/w\/([^/]+)$/, (id) => detailView(id));
registerRoute(/^\/w\/([^/]+)\/d\/([^/]+)$/, (id, deliveryId) => detailView(id, deliveryId));

/** A subscription's ordering in words: none, per row, or per group of the columns it names. */
function orderingText(ordering) {
  if (ordering === 'row') return 'per row, in commit order';
  if (ordering && typeof ordering === 'object') return `per ${ordering.by.join(' + ')}, in commit order`;
  return 'none';
}
