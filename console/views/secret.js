import { h } from '../dom.js';

// A signing secret is generated in the browser and shown once: the API never returns it.

/** A fresh Standard Webhooks secret: whsec_ + 32 random bytes in base64. */
export function generateSecret() {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}

export function secretOnce(secret, intro, say) {
  const code = h('code', { id: 'new-secret' }, secret);
  const copy = h(
    'button',
    { type: 'button', class: 'secondary', onclick: () => navigator.clipboard?.writeText(secret).then(() => say('Secret copied.')) },
    'Copy',
  );
  return h(
    'section',
    { class: 'secret', 'aria-labelledby': 'secret-title' },
    h('h3', { id: 'secret-title' }, 'Signing secret — shown once'),
    h('p', {}, intro),
    h('p', {}, code, ' ', copy),
  );
}
