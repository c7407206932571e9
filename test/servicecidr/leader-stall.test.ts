// A leader whose connections to the apiserver stall must stop acting within its renew
// deadline, before another candidate can take the lease, and must not let a write it had in
// flight land afterwards. The leader talks to the real kube-apiserver through a loopback TCP
// proxy that can hold what clients send, on new and on kept-alive connections alike; the
// second candidate talks to it directly.
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { KubeConfig, type NetworkingV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { servicecidr } from '../../ts/index.js';
import { connectionFromKubeConfig } from '../../ts/kube/connection.js';
import { restClient } from '../../ts/kube/rest.js';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import { apis, createCIDR, readCIDR, runController, waitFor } from './helpers.js';

let api: ApiServer;
let net: NetworkingV1Api;

beforeAll(async () => {
  api = await startApiServer();
  net = apis(api.kubeConfig).net;
});
afterAll(async () => {
  await api?.stop();
});

/**
 * Forwards loopback TCP to the apiserver. `stall(ms)` holds every connection accepted during
 * the next `ms`, and what clients send on established ones, until that time is up (answers and
 * watch events still flow); a connection its client closed meanwhile is dropped unsent, like a
 * request that never got through.
 */
class StallingProxy {
  readonly #server: Server;
  #stallUntil = 0;
  readonly #sockets = new Set<Socket>();
  port = 0;

  constructor(target: number) {
    this.#server = createServer((client) => {
      this.#sockets.add(client);
      client.on('close', () => this.#sockets.delete(client));
      const held: Buffer[] = [];
      const hold = (c: Buffer) => held.push(c);
      client.on('data', hold);
      client.on('error', () => {});
      const forward = () => {
        if (client.destroyed || client.readableEnded) {
          client.destroy();
          return;
        }
        const upstream = createConnection(target, '127.0.0.1');
        this.#sockets.add(upstream);
        upstream.on('close', () => {
          this.#sockets.delete(upstream);
          client.destroy();
        });
        upstream.on('error', () => client.destroy());
        client.on('close', () => upstream.destroy());
        client.off('data', hold);
        for (const c of held) upstream.write(c);
        const later: Buffer[] = [];
        const release = () => {
          if (client.destroyed) return;
          for (const c of later.splice(0)) upstream.write(c);
        };
        client.on('data', (c: Buffer) => {
          const wait = this.#stallUntil - Date.now();
          if (wait <= 0 && later.length === 0) {
            upstream.write(c);
            return;
          }
          if (later.push(c) === 1) setTimeout(release, Math.max(0, wait));
        });
        client.on('end', () => upstream.end());
        upstream.pipe(client);
      };
      const wait = this.#stallUntil - Date.now();
      if (wait > 0) setTimeout(forward, wait);
      else forward();
    });
  }

  listen(): Promise<void> {
    return new Promise((r) =>
      this.#server.listen(0, '127.0.0.1', () => {
        const a = this.#server.address();
        this.port = typeof a === 'object' && a ? a.port : 0;
        r();
      }),
    );
  }

  stall(ms: number): void {
    this.#stallUntil = Date.now() + ms;
  }

  close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    return new Promise((r) => this.#server.close(() => r()));
  }
}

const timing = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 };

describe('leader election with a stalled connection', () => {
  it('the ex-leader stops within the renew deadline and writes nothing after', async () => {
    const proxy = new StallingProxy(Number(new URL(api.url).port));
    await proxy.listen();
    const viaProxy = new KubeConfig();
    viaProxy.loadFromOptions({
      clusters: [{ name: 'proxy', server: `https://127.0.0.1:${proxy.port}`, caFile: api.caFile }],
      users: [{ name: 'admin', token: api.token }],
      contexts: [{ name: 'proxy', cluster: 'proxy', user: 'admin' }],
      currentContext: 'proxy',
    });
    const lease = { ...timing, name: 'stall-test' };
    const a = runController({ kubeConfig: viaProxy, leaderElection: { ...lease, identity: 'stall-a' } });
    const bStop = new AbortController();
    const b = new servicecidr.LeaderElector(
      restClient(await connectionFromKubeConfig(api.kubeConfig), 'stall-b'),
      servicecidr.silentLogger,
      { ...lease, identity: 'stall-b' },
    );
    let bDone: Promise<void> | undefined;
    try {
      await waitFor('stall-a leads', async () => a.controller.active, 30_000, 20);
      // Let a renew once more so its last renewal is recent and known to be before t0.
      await new Promise((r) => setTimeout(r, timing.retryPeriodMs + 200));
      const HOLD = 6000;
      proxy.stall(HOLD);
      const t0 = Date.now();
      // a sees the new ServiceCIDR on its established watch; the finalizer patch it sends for it
      // is held by the proxy, and so is its next renewal.
      await createCIDR(net, 'stall-x', ['10.240.0.0/24']);
      const created = await readCIDR(net, 'stall-x');
      bDone = b.run(
        bStop.signal,
        (s) => new Promise((r) => s.addEventListener('abort', () => r(), { once: true })),
      );

      let aStoppedAt = 0;
      let bLeadsAt = 0;
      await waitFor(
        'a stops and b leads',
        async () => {
          if (!aStoppedAt && !a.controller.active) aStoppedAt = Date.now();
          if (!bLeadsAt && b.isLeader) bLeadsAt = Date.now();
          return aStoppedAt > 0 && bLeadsAt > 0;
        },
        30_000,
        20,
      );
      // Bounded by the renew deadline (plus scheduling slack on a busy machine), and before the
      // lease could be taken.
      expect(aStoppedAt - t0).toBeLessThan(timing.renewDeadlineMs + 1000);
      expect(aStoppedAt).toBeLessThan(bLeadsAt);

      // The held connections are released; nothing a sent may land.
      await new Promise((r) => setTimeout(r, Math.max(0, t0 + HOLD + 3000 - Date.now())));
      const after = await readCIDR(net, 'stall-x');
      expect(after?.metadata?.finalizers ?? []).toEqual([]);
      expect(after?.status?.conditions ?? []).toEqual([]);
      expect(after?.metadata?.resourceVersion).toBe(created?.metadata?.resourceVersion);
      expect(a.controller.active).toBe(false);
      expect(b.isLeader).toBe(true);
    } finally {
      bStop.abort();
      await Promise.all([a.stop(), bDone]);
      await proxy.close();
    }
  }, 120_000);
});
