import { call, enc } from '../api.js';
import { h } from '../dom.js';
import { ago, badge, copyButton, scrollTable, time } from '../format.js';
import { problem, say } from '../shell.js';

// One delivery: what was sent (request headers and body) beside what came back (status and the
// first KiB of the answer), a before/after of an UPDATE, every attempt, and "Retry now".

const json = (v) => JSON.stringify(v, null, 2);

function headerText(headers) {
  return Object.entries(headers ?? {})
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n');
}

/** Column, before, after: the changed columns marked (an UPDATE's old_record against record). */
function beforeAfter(p) {
  const columns = [...new Set([...Object.keys(p.old_record ?? {}), ...Object.keys(p.record ?? {})])];
  const changed = new Set(p.changed_fields ?? []);
  const cell = (v) => h('td', {}, h('code', {}, v === undefined ? '—' : JSON.stringify(v)));
  const rows = columns.map((c) =>
    h(
      'tr',
      { class: changed.has(c) ? 'changed' : '' },
      h('th', { scope: 'row' }, c, changed.has(c) ? h('span', { class: 'mark' }, ' changed') : ''),
      cell(p.old_record?.[c]),
      cell(p.record?.[c]),
    ),
  );
  return h(
    'section',
    { 'aria-labelledby': 'diff-title' },
    h('h4', { id: 'diff-title' }, 'Before and after'),
    scrollTable('Before and after', ['Column', 'Before', 'After'], rows),
  );
}

function requestPanel(d) {
  const headers = headerText(d.requestHeaders);
  // The exact bytes that were signed and sent, not the payload re-formatted (19.90 would read 19.9).
  const body = d.body ?? (d.payload ? json(d.payload) : null);
  return h(
    'section',
    { class: 'panel', 'aria-labelledby': 'request-title' },
    h('h4', { id: 'request-title' }, 'Request'),
    d.requestHeaders
      ? [
          h('pre', { class: 'payload', id: 'request-headers', tabindex: '0', 'aria-label': 'Request headers' }, headers),
          copyButton('Headers', () => headers, say),
        ]
      : h('p', {}, 'Headers not kept.'),
    body
      ? [
          h('pre', { class: 'payload', id: 'request-body', tabindex: '0', 'aria-label': 'Payload' }, body),
          copyButton('Body', () => body, say),
        ]
      : h('p', {}, 'Payload no longer kept.'),
    h('p', { class: 'help' }, 'Signature headers are not kept; custom header values show as [hidden].'),
  );
}

function responsePanel(last, responseHeaders) {
  const headers = responseHeaders ? headerText(responseHeaders) : null;
  return h(
    'section',
    { class: 'panel', 'aria-labelledby': 'response-title' },
    h('h4', { id: 'response-title' }, 'Response (last attempt)'),
    !last
      ? h('p', {}, 'No attempt yet.')
      : [
          h(
            'p',
            {},
            'Status ',
            h('strong', { id: 'response-status' }, last.httpStatus ?? 'no answer'),
            last.error ? ` — ${last.error}` : '',
          ),
          headers
            ? [
                h('pre', { class: 'payload', id: 'response-headers', tabindex: '0', 'aria-label': 'Response headers' }, headers),
                copyButton('Response headers', () => headers, say),
              ]
            : null,
          last.responseBody === null
            ? h('p', {}, 'No answer body.')
            : [
                h('pre', { class: 'payload', id: 'response-body', tabindex: '0', 'aria-label': 'Answer, first KiB' }, last.responseBody),
                copyButton('Answer', () => last.responseBody, say),
              ],
        ],
  );
}

/**
 * Renders delivery `deliveryId` of the subscription at `path` into `slot`. `breaker()` tells
 * whether the endpoint's breaker holds a retry back (and until when).
 */
export async function openDelivery(slot, path, deliveryId, breaker) {
  const reopen = () => openDelivery(slot, path, deliveryId, breaker);
  try {
    const { delivery: d } = await call('GET', `${path}/deliveries/${enc(deliveryId)}`);
    const attempts = d.attemptLog.map((a) =>
      h(
        'tr',
        {},
        h('td', {}, a.kind === 'wait' ? `${a.attempt} (waited)` : String(a.attempt)),
        h('td', {}, time(a.startedAt)),
        h('td', {}, `${a.durationMs} ms`),
        h('td', {}, a.httpStatus ?? '—'),
        h('td', {}, a.error ?? ''),
        h('td', {}, a.responseBody === null ? '—' : h('pre', { class: 'answer' }, a.responseBody)),
      ),
    );
    async function retry() {
      try {
        await call('POST', `${path}/deliveries/${enc(d.id)}/retry`);
        const b = await breaker();
        if (b?.state === 'open' && b.openUntil) {
          const at = new Date(b.openUntil);
          say(
            `Queued, but the endpoint's breaker is open until ${at.toLocaleTimeString()} (${ago(at)}): nothing is sent before then; the delivery waits (no attempt spent) and goes once the breaker closes.`,
          );
        } else say('Sent again: the delivery is pending.');
        await reopen();
      } catch (err) {
        problem(err);
      }
    }
    async function discard() {
      try {
        await call('POST', `${path}/deliveries/${enc(d.id)}/discard`);
        say("Discarded: the row's later changes go on.");
        await reopen();
      } catch (err) {
        problem(err);
      }
    }
    const canRetry = (d.status === 'delivered' || d.status === 'dead') && d.payload !== null;
    // replaceChildren would print a null as text: what is absent is left out first.
    slot.replaceChildren(
      ...[
        h('h3', { id: 'delivery-title', tabindex: '-1' }, `Delivery ${d.id}`),
        h(
          'dl',
          { class: 'facts' },
          h('dt', {}, 'Status'),
          h('dd', { id: 'delivery-status' }, badge([d.status, d.status]), d.holdsRow ? ' — holds its row: later changes wait' : null),
          h('dt', {}, 'Event id'),
          h(
            'dd',
            {},
            h('code', { id: 'event-id' }, d.eventId),
            ' ',
            copyButton('Event id', () => d.eventId, say),
          ),
          h('dt', {}, 'Batch'),
          h('dd', { id: 'batch-id' }, d.batchId ? h('code', {}, d.batchId) : 'sent alone'),
          h('dt', {}, 'Next attempt'),
          h('dd', {}, time(d.nextAttemptAt)),
          h('dt', {}, 'Delivered'),
          h('dd', {}, time(d.deliveredAt)),
        ),
        h(
          'div',
          { class: 'actions' },
          canRetry ? h('button', { type: 'button', id: 'retry', onclick: retry }, 'Retry now') : null,
          d.holdsRow
            ? h('button', { type: 'button', class: 'secondary', id: 'discard', onclick: discard }, 'Discard: let the row go on')
            : null,
          h('button', { type: 'button', class: 'secondary', onclick: reopen }, 'Reload'),
        ),
        h('div', { class: 'side-by-side' }, requestPanel(d), responsePanel(d.attemptLog[d.attemptLog.length - 1], d.responseHeaders)),
        d.event === 'UPDATE' && d.payload?.old_record ? beforeAfter(d.payload) : null,
        h('h4', {}, 'Attempts'),
        attempts.length
          ? scrollTable('Attempts', ['#', 'Started', 'Took', 'HTTP', 'Error', 'Answer (first KiB)'], attempts)
          : h('p', {}, 'No attempt yet.'),
      ].filter(Boolean),
    );
    slot.querySelector('#delivery-title').focus();
  } catch (err) {
    if (err.code === 'DELIVERY_NOT_FOUND')
      slot.replaceChildren(h('p', { class: 'empty' }, `There is no delivery ${deliveryId} for this subscription.`));
    else problem(err);
  }
}
