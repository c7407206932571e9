// ResilientInformer against a local HTTP server that fails on purpose: restarts back off
// exponentially during an outage, and the backoff resets once the server answers again.
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type KubeConfig, NetworkingV1Api, type V1ServiceCIDR } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { servicecidr } from '../../ts/index.js';
import { type InformerOptions, ResilientInformer } from '../../ts/kube/informer.js';
import { loopbackKubeConfig, waitFor } from './helpers.js';

const PATH = '/apis/networking.k8s.io/v1/servicecidrs';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function fakeServer(healthy = false) {
  const lists: number[] = [];
  const watches: ServerResponse[] = [];
  const watchUrls: string[] = [];
  const state = { healthy };
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.searchParams.has('watch')) watchUrls.push(url.search);
    // A server without watch-list refuses its parameters.
    if (url.searchParams.has('sendInitialEvents')) {
      res.writeHead(422, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 422 }));
      return;
    }
    if (url.pathname !== PATH || !state.healthy) {
      if (!url.searchParams.has('watch')) lists.push(performance.now());
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 500 }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    if (url.searchParams.has('watch')) {
      res.flushHeaders();
      watches.push(res); // held open: a live watch
      return;
    }
    lists.push(performance.now());
    res.end(
      JSON.stringify({
        kind: 'ServiceCIDRList',
        apiVersion: 'networking.k8s.io/v1',
        metadata: { resourceVersion: '7' },
        items: [],
      }),
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        for (const w of watches) w.destroy();
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { kc: loopbackKubeConfig(port), lists, watchUrls, state };
}

function cidrInformer(kc: KubeConfig, options?: InformerOptions): ResilientInformer<V1ServiceCIDR> {
  const net = kc.makeApiClient(NetworkingV1Api);
  return new ResilientInformer<V1ServiceCIDR>(
    kc,
    PATH,
    () => net.listServiceCIDR(),
    'ServiceCIDR',
    servicecidr.silentLogger,
    options,
  );
}

describe('ResilientInformer backoff', () => {
  it('grows 500 ms, 1 s, 2 s… while the server fails, and resets once a list succeeds', async () => {
    const { kc, lists, state } = await fakeServer();
    const inf = cidrInformer(kc);
    cleanups.push(() => inf.stop());
    const synced = inf.start();
    await new Promise((r) => setTimeout(r, 4200));
    // Attempts at about 0, 0.5, 1.5 and 3.5 s: a backoff reset per attempt would give ~9.
    expect(lists.length).toBeGreaterThanOrEqual(3);
    expect(lists.length).toBeLessThanOrEqual(5);
    const gaps = lists.slice(1).map((t, i) => t - (lists[i] as number));
    expect(gaps[0]).toBeGreaterThanOrEqual(450);
    for (let i = 1; i < gaps.length; i++) {
      expect(gaps[i]).toBeGreaterThanOrEqual((gaps[i - 1] as number) * 1.7);
    }
    expect(inf.backoffMs).toBeGreaterThanOrEqual(2000);

    state.healthy = true;
    await synced;
    expect(inf.hasSynced).toBe(true);
    await waitFor('backoff reset', async () => inf.backoffMs === 0, 10_000, 20);
  }, 30_000);

  it('with watchList, a server that refuses the initial events over the watch gets a LIST', async () => {
    const { kc, lists, watchUrls } = await fakeServer(true);
    const inf = cidrInformer(kc, { watchList: true });
    cleanups.push(() => inf.stop());
    await inf.start();
    expect(inf.hasSynced).toBe(true);
    expect(lists).toHaveLength(1);
    await waitFor('the watch', async () => watchUrls.length === 2, 5000, 20);
    expect(watchUrls[0]).toContain('sendInitialEvents=true');
    expect(watchUrls[1]).toContain('resourceVersion=7');
    expect(watchUrls[1]).not.toContain('sendInitialEvents');
  }, 30_000);
});
