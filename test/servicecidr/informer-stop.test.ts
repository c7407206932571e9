// A ResilientInformer stopped while its first list is in flight must not open its watch afterwards:
// client-node's informer opens it anyway, and an open watch keeps a daemon from exiting after
// SIGTERM. The "API server" here is a local HTTP server that only counts watch connections.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig, type KubernetesListObject, type V1ConfigMap } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ResilientInformer } from '../../ts/kube/informer.js';
import { silentLogger } from '../../ts/servicecidr/logger.js';

let server: Server;
let open = 0;
let opened = 0;
let kc: KubeConfig;

beforeEach(async () => {
  open = 0;
  opened = 0;
  server = createServer((req, res) => {
    opened++;
    open++;
    req.on('close', () => open--);
    // A watch that never sends an event.
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.flushHeaders();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: 'c',
        server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        skipTLSVerify: true,
      },
    ],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
    currentContext: 'c',
  });
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/** A list call the test answers when it likes. */
function heldList() {
  let answer: () => void = () => {};
  const list = () =>
    new Promise<KubernetesListObject<V1ConfigMap>>((r) => {
      answer = () => r({ items: [], metadata: { resourceVersion: '1' } });
    });
  return { list, answer: () => answer() };
}

function informer() {
  const held = heldList();
  const inf = new ResilientInformer<V1ConfigMap>(
    kc,
    '/api/v1/configmaps',
    held.list,
    'ConfigMap',
    silentLogger,
  );
  return { held, inf };
}

const settle = () => new Promise((r) => setTimeout(r, 500));

describe('stopping an informer during its first list', () => {
  it('a running informer does hold its watch (the server counts)', async () => {
    const { held, inf } = informer();
    const started = inf.start();
    held.answer();
    await started;
    await settle();
    expect([opened, open]).toEqual([1, 1]);
    await inf.stop();
    await settle();
    expect(open).toBe(0);
  });

  it('ResilientInformer leaves no watch open', async () => {
    const { held, inf } = informer();
    const started = inf.start();
    await settle();
    await inf.stop();
    await started;
    held.answer();
    await settle();
    expect(open).toBe(0);
  });
});
