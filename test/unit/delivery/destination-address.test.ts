import { expect } from 'chai';
import {
  decodeAddress,
  encodeAddress,
  exchangeProblem,
  fillTemplate,
  isDestinationUrl,
  natsSubjectProblem,
  routingKeyProblem,
  templateProblems,
} from '../../../src/delivery/destinations/address.js';
import { redact } from '../../../src/delivery/destinations/credentials.js';
import { logged } from '../../../src/delivery/breaker.js';

// A destination subscription's address rides in `url` through the breaker, the retry queue and
// the stream: it must come back out exactly as it went in, whatever its subject holds.

describe('unit: destination addresses and templates', () => {
  it('an address survives the stored URL, braces, dots, slashes and unicode included', () => {
    for (const a of [
      { kind: 'nats' as const, destinationId: 'dst_0123abcd', subject: 'walgate.shop_master.orders.{event}' },
      { kind: 'nats' as const, destinationId: 'dst_x', subject: 'ü.ñ.{event}' },
      { kind: 'rabbitmq' as const, destinationId: 'dst_y', exchange: '', routingKey: 'orders/{event}?#' },
      { kind: 'rabbitmq' as const, destinationId: 'dst_z', exchange: 'amq.topic', routingKey: 'a.b.{event}' },
    ]) {
      const stored = encodeAddress(a);
      expect(isDestinationUrl(stored)).to.equal(true);
      expect(decodeAddress(new URL(stored))).to.deep.equal(a);
    }
    expect(decodeAddress(new URL('https://example.com/hooks'))).to.equal(undefined);
    expect(isDestinationUrl('https://example.com/hooks')).to.equal(false);
  });

  it('logs name a destination endpoint by its destination id, as an HTTPS one by its origin', () => {
    const url = encodeAddress({ kind: 'nats', destinationId: 'dst_0123abcd', subject: 'a.b.{event}' });
    expect(logged({ projectId: 'p', environment: 'e', url }).origin).to.equal('walgate-nats://dst_0123abcd');
    expect(logged({ projectId: 'p', environment: 'e', url: 'https://example.com/h?k=1' }).origin).to.equal('https://example.com');
  });

  it('templates: {schema}, {table}, {event} and {key} only; filling leaves the others for later', () => {
    expect(templateProblems('walgate.{schema}.{table}.{event}')).to.deep.equal([]);
    expect(templateProblems('a.{tabel}')).to.deep.equal([
      'names an unknown placeholder {tabel}: only {schema}, {table}, {event} and {key} are known',
    ]);
    expect(templateProblems('a.{table')).to.deep.equal(['has a brace that opens or closes no placeholder']);
    expect(fillTemplate('{schema}.{table}.{event}', { schema: 's', table: 't' })).to.equal('s.t.{event}');
    expect(fillTemplate('s.t.{event}', { event: 'INSERT' })).to.equal('s.t.INSERT');
  });

  it('NATS subjects: one subject, no empty token, whitespace or wildcard', () => {
    expect(natsSubjectProblem('walgate.shop.orders.INSERT')).to.equal(undefined);
    for (const bad of ['', 'a..b', '.a', 'a.', 'a b', 'a.*.b', 'a.>', 'x'.repeat(1025)])
      expect(natsSubjectProblem(bad), bad).to.be.a('string');
  });

  it('RabbitMQ: exchange names as the broker allows them, routing keys up to 255 bytes', () => {
    expect(exchangeProblem('')).to.equal(undefined);
    expect(exchangeProblem('amq.topic')).to.equal(undefined);
    expect(exchangeProblem('orders events')).to.be.a('string');
    expect(routingKeyProblem('k'.repeat(255))).to.equal(undefined);
    expect(routingKeyProblem('é'.repeat(128))).to.be.a('string');
  });

  it('errors lose the password and token before they are recorded', () => {
    expect(redact('login failed for walgate:s3cret at host', { username: 'walgate', password: 's3cret' })).to.equal(
      'login failed for walgate:[redacted] at host',
    );
    expect(redact('bad token tok-123', { token: 'tok-123' })).to.equal('bad token [redacted]');
  });
});
