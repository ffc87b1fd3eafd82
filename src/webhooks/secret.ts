// The sealing of signing secrets lives with their user, the sender (src/delivery/secrets.ts).
export { openWebhookSecret, sealWebhookSecret } from '../delivery/secrets.js';
