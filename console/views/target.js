import { h } from '../dom.js';

// Where a subscription delivers, in its form: an HTTPS URL, or one of the environment's broker
// destinations (docs/destinations.md) with a subject (NATS) or an exchange and routing key
// (RabbitMQ) — templates over {schema}, {table}, {event} and, with row ordering, {key}. The API
// checks them and names the field it refuses (destination.subject …).

/**
 * The fields for `w` (null on create) and the environment's `destinations`; `value()` is the part
 * of the body it decides: `{url}` or `{destination}`.
 */
export function targetFields(w, destinations) {
  const current = w?.destination ?? null;
  const toUrl = h('input', { type: 'radio', name: 'target', id: 'target-url', checked: !current });
  const toDestination = h('input', {
    type: 'radio',
    name: 'target',
    id: 'target-destination',
    checked: !!current,
    disabled: !destinations.length && !current,
  });
  const url = h('input', { id: 'url', name: 'url', type: 'url', placeholder: 'https://example.com/hooks', value: w?.url ?? '' });
  const picked = h(
    'select',
    { id: 'destination', name: 'destination' },
    destinations.map((d) => h('option', { value: d.name, selected: d.name === current?.name }, `${d.name} (${d.kind})`)),
  );
  const subject = h('input', {
    id: 'destination-subject',
    autocomplete: 'off',
    placeholder: 'walgate.{schema}.{table}.{event}',
    value: current?.subject ?? '',
  });
  const exchange = h('input', { id: 'destination-exchange', autocomplete: 'off', placeholder: 'orders', value: current?.exchange ?? '' });
  const routingKey = h('input', {
    id: 'destination-routing-key',
    autocomplete: 'off',
    placeholder: '{table}.{event}',
    value: current?.routingKey ?? '',
  });
  const natsBox = h(
    'div',
    {},
    h('label', { for: 'destination-subject' }, 'Subject'),
    subject,
    h('p', { class: 'help' }, 'A template over {schema}, {table}, {event} and, with row ordering, {key} (the row’s primary key).'),
  );
  const rabbitBox = h(
    'div',
    {},
    h('label', { for: 'destination-exchange' }, 'Exchange (empty: the default exchange)'),
    exchange,
    h('label', { for: 'destination-routing-key' }, 'Routing key'),
    routingKey,
    h('p', { class: 'help' }, 'A template over {schema}, {table}, {event} and, with row ordering, {key}; at most 255 bytes.'),
  );
  const urlBox = h('div', {}, h('label', { for: 'url' }, 'Receiver URL (https)'), url);
  const destinationBox = h('div', {}, h('label', { for: 'destination' }, 'Destination'), picked, natsBox, rabbitBox);
  const kindOf = () => destinations.find((d) => d.name === picked.value)?.kind ?? (current?.subject !== undefined ? 'nats' : 'rabbitmq');
  const refresh = () => {
    urlBox.hidden = !toUrl.checked;
    url.required = toUrl.checked;
    destinationBox.hidden = !toDestination.checked;
    natsBox.hidden = kindOf() !== 'nats';
    rabbitBox.hidden = kindOf() !== 'rabbitmq';
    subject.required = toDestination.checked && kindOf() === 'nats';
    routingKey.required = toDestination.checked && kindOf() === 'rabbitmq';
  };
  for (const el of [toUrl, toDestination, picked]) el.addEventListener('change', refresh);
  refresh();

  const element = h(
    'fieldset',
    {},
    h('legend', {}, 'Deliver to'),
    h('label', { class: 'check', for: 'target-url' }, toUrl, ' An HTTPS URL (POST)'),
    h('label', { class: 'check', for: 'target-destination' }, toDestination, ' A broker destination (NATS JetStream, RabbitMQ)'),
    destinations.length || current
      ? null
      : h('p', { class: 'help' }, 'No destination in this environment yet: ', h('a', { href: '#/destinations' }, 'add one'), '.'),
    urlBox,
    destinationBox,
  );
  const value = () => {
    if (toUrl.checked) return { url: url.value.trim() };
    const destination =
      kindOf() === 'nats'
        ? { name: picked.value, subject: subject.value.trim() }
        : { name: picked.value, exchange: exchange.value.trim(), routingKey: routingKey.value.trim() };
    return { destination };
  };
  return { element, value };
}
