import type { RequestSender, SendResult, Sender } from '../sender.js';
import { USER_AGENT } from '../sender.js';
import { decodeAddress } from './address.js';
import type { DestinationConnections } from './connections.js';

/**
 * The sender an attempt goes through, whatever the subscription delivers to: an https: URL is
 * POSTed (sender.ts), a destination's address (address.ts) published to its broker with the same
 * body and the same headers, so retries, dead letters and the breaker apply unchanged.
 */
export class DeliverySenders implements RequestSender {
  constructor(
    private readonly https: Sender,
    private readonly destinations: DestinationConnections,
  ) {}

  post(endpoint: string, url: URL, headers: Record<string, string>, body: string): Promise<SendResult> {
    const address = decodeAddress(url);
    if (!address) return this.https.post(endpoint, url, headers, body);
    // The headers the POST would carry, under the same names (the HTTP sender adds these two itself).
    return this.destinations.publish(address, endpoint, { 'content-type': 'application/json', 'user-agent': USER_AGENT, ...headers }, body);
  }

  async close(): Promise<void> {
    await Promise.all([this.https.close(), this.destinations.close()]);
  }
}
