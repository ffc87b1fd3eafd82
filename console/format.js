import { h } from './dom.js';

// How values read in the console: times relative with the absolute time on hover, states as
// badges, tables that scroll inside themselves on a narrow screen, text copied with one button.

const UNITS = [
  ['year', 365 * 86_400_000],
  ['month', 30 * 86_400_000],
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
  ['second', 1000],
];
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

/** Where a subscription delivers: its URL, or its broker destination (docs/destinations.md). */
export function target(w) {
  const d = w.destination;
  if (!d) return w.url;
  return d.subject !== undefined
    ? `${d.name} (NATS) → ${d.subject}`
    : `${d.name} (RabbitMQ) → ${d.exchange || '(default exchange)'} / ${d.routingKey}`;
}

export function ago(date, now = Date.now()) {
  const diff = date.getTime() - now;
  for (const [unit, ms] of UNITS) if (Math.abs(diff) >= ms || unit === 'second') return relative.format(Math.round(diff / ms), unit);
  return '';
}

/** "3 minutes ago", the absolute time in its title (hover) and datetime. */
export function time(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return h('time', { datetime: iso, title: d.toLocaleString() }, ago(d));
}

export const badge = ([kind, text]) => h('span', { class: `badge ${kind}` }, text);

/** A subscription's state from its row and breaker (both in the list and in its view). */
export function stateOf(w, breaker, disabledReason = w.disabledReason) {
  if (disabledReason) return ['disabled', 'Disabled'];
  if (w.problems?.length) return ['problem', `Problem: ${w.problems.map((p) => p.code).join(', ')}`];
  if (!w.active) return ['paused', 'Paused'];
  if (breaker?.state === 'open') return ['open', 'Breaker open'];
  if (breaker?.state === 'half-open') return ['open', 'Breaker half-open'];
  // The API's `state`: its endpoint's latest attempts failed (the breaker counts them, a success resets).
  if (w.state === 'failing') {
    const n = breaker?.consecutiveFailures;
    return ['failing', n ? `Failing: last ${n} attempt${n === 1 ? '' : 's'} failed` : 'Failing'];
  }
  return ['active', 'Active'];
}

/** A table that scrolls sideways inside itself on a narrow screen, reachable by keyboard. */
export function scrollTable(label, head, rows) {
  // Each cell names its column, so on a phone a row reads as a card (console.css).
  for (const row of rows) [...row.children].forEach((cell, i) => head[i] && cell.setAttribute('data-label', head[i]));
  return h(
    'div',
    { class: 'scroll', role: 'region', 'aria-label': label, tabindex: '0' },
    h(
      'table',
      {},
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          head.map((c) => h('th', { scope: 'col' }, c)),
        ),
      ),
      h('tbody', {}, rows),
    ),
  );
}

/** A copy button for `text`; `say` reports it. */
export function copyButton(label, text, say) {
  return h(
    'button',
    {
      type: 'button',
      class: 'secondary copy',
      onclick: () =>
        navigator.clipboard?.writeText(text()).then(
          () => say(`${label} copied.`),
          () => say('Copying is not allowed here.'),
        ),
    },
    `Copy ${label.toLowerCase()}`,
  );
}

export const percent = (r) => (r === null ? '—' : `${(r * 100).toFixed(r === 1 ? 0 : 1)} %`);
export const millis = (n) => (n === null ? '—' : `${n} ms`);
