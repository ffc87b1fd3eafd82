import { h, s } from './dom.js';

// Delivered and failed per minute over the last hour: 60 stacked bars, drawn as inline SVG.

const W = 600;
const H = 120;
const PAD = 18;

export function minuteChart(minutes) {
  const max = Math.max(1, ...minutes.map((m) => m.delivered + m.failed));
  const bar = W / minutes.length;
  const scale = (n) => (n / max) * (H - PAD);
  const delivered = minutes.reduce((n, m) => n + m.delivered, 0);
  const failed = minutes.reduce((n, m) => n + m.failed, 0);
  const summary = `Last hour: ${delivered} delivered, ${failed} failed attempts; busiest minute ${max}.`;
  const bars = minutes.map((m, i) => {
    const x = i * bar + 1;
    const hd = scale(m.delivered);
    const hf = scale(m.failed);
    const label = `${new Date(m.minute).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })}: ${m.delivered} delivered, ${m.failed} failed`;
    return s(
      'g',
      {},
      s('title', {}, label),
      hd > 0 ? s('rect', { class: 'ok', x, y: H - PAD - hd, width: bar - 2, height: hd }) : null,
      hf > 0 ? s('rect', { class: 'fail', x, y: H - PAD - hd - hf, width: bar - 2, height: hf }) : null,
    );
  });
  return h(
    'figure',
    { class: 'chart' },
    s(
      'svg',
      { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': summary, preserveAspectRatio: 'none' },
      s('line', { class: 'axis', x1: 0, y1: H - PAD, x2: W, y2: H - PAD }),
      bars,
      s('text', { x: 0, y: H - 4 }, '60 min ago'),
      s('text', { x: W, y: H - 4, 'text-anchor': 'end' }, 'now'),
      s('text', { x: 0, y: 10 }, String(max)),
    ),
    h('figcaption', {}, h('span', { class: 'key ok' }, 'delivered'), ' ', h('span', { class: 'key fail' }, 'failed'), ` — ${summary}`),
  );
}
