// The informer both daemons share, against a local HTTP server whose lists all fail: restarts
// follow client-go's reflector backoff (800 ms first, doubling), one step per failure even when
// a failure comes as several errors, and every failure is reported with its pause.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CoreV1Api, KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { ResilientInformer } from '../../ts/kube/informer.js';
import { silentLogger } from '../../ts/servicecidr/logger.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function failingServer() {
  const lists: number[] = [];
  const server = createServer((_req, res) => {
    lists.push(performance.now());
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 500 }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      {
        name: 'f',
        server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        skipTLSVerify: true,
      },
    ],
    users: [{ name: 'u' }],
    contexts: [{ name: 'c', cluster: 'f', user: 'u' }],
    currentContext: 'c',
  });
  return { kc, lists };
}

describe('ResilientInformer restarts', () => {
  it("pause 800 ms, then 1.6 s, like client-go's reflector, with at most 10% jitter", async () => {
    const { kc, lists } = await failingServer();
    const api = kc.makeApiClient(CoreV1Api);
    const reported: number[] = [];
    const inf = new ResilientInformer<V1ConfigMap>(
      kc,
      '/api/v1/configmaps',
      () => api.listConfigMapForAllNamespaces(),
      'ConfigMap',
      silentLogger,
      { onError: (_err, backoffMs) => reported.push(backoffMs) },
    );
    cleanups.push(() => inf.stop());
    await inf.run();
    expect(inf.hasSynced).toBe(false);
    await new Promise((r) => setTimeout(r, 3000));
    const gaps = lists.slice(1).map((t, i) => t - (lists[i] as number));
    expect(gaps.length).toBeGreaterThanOrEqual(2);
    expect(gaps[0]).toBeGreaterThanOrEqual(780);
    expect(gaps[0]).toBeLessThan(800 * 1.1 + 150);
    expect(gaps[1]).toBeGreaterThanOrEqual(1580);
    expect(gaps[1]).toBeLessThan(1600 * 1.1 + 150);
    expect(inf.restarts).toBe(gaps.length);
    // One step per failed attempt, however many errors it raised.
    expect([...new Set(reported)].slice(0, 3)).toEqual([800, 1600, 3200]);
  }, 15_000);
});
