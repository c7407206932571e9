// The requests the controller makes, as upstream's: its informers take their initial state
// over the watch (no LIST), and it writes status once per ServiceCIDR even when the watch lags
// behind its writes. The controller talks to the real kube-apiserver through a loopback proxy
// that delays every watch stream (a slow informer, as on a loaded node) and records what it
// forwards.
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { NetworkingV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ApiServer, startApiServer } from '../support/apiserver.js';
import { apis, createCIDR, loopbackKubeConfig, runController, waitReady } from './helpers.js';

const WATCH_DELAY_MS = 400;
const N = 12;

let api: ApiServer;
let net: NetworkingV1Api;
let proxy: Server;
const statusWrites = new Map<string, number>();
const requests: string[] = [];

/** Forwards to the API server; each chunk of a watch response goes out WATCH_DELAY_MS late. */
function forward(req: IncomingMessage, res: ServerResponse): void {
  const url = req.url ?? '/';
  requests.push(`${req.method} ${url}`);
  const status = /^\/apis\/networking\.k8s\.io\/v1\/servicecidrs\/([^/?]+)\/status/.exec(url);
  if (req.method === 'PATCH' && status?.[1]) {
    statusWrites.set(status[1], (statusWrites.get(status[1]) ?? 0) + 1);
  }
  const upstream = new URL(api.url);
  const headers = { ...req.headers, host: upstream.host, authorization: `Bearer ${api.token}` };
  const out = httpsRequest(
    {
      host: upstream.hostname,
      port: upstream.port,
      path: url,
      method: req.method,
      headers,
      ca: readFileSync(api.caFile),
    },
    (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      if (!/[?&]watch=(true|1)/.test(url)) {
        r.pipe(res);
        return;
      }
      // A watch's headers go out at once, as the API server sends them.
      res.flushHeaders();
      let chain = Promise.resolve();
      const later = () => new Promise<void>((ok) => setTimeout(ok, WATCH_DELAY_MS));
      r.on('data', (chunk: Buffer) => {
        chain = chain.then(later).then(() => {
          if (!res.destroyed) res.write(chunk);
        });
      });
      r.on('end', () => {
        void chain.then(() => res.end());
      });
    },
  );
  out.on('error', () => res.destroy());
  res.on('close', () => out.destroy());
  req.pipe(out);
}

beforeAll(async () => {
  api = await startApiServer();
  net = apis(api.kubeConfig).net;
  proxy = createServer(forward);
  proxy.listen(0, '127.0.0.1');
  await once(proxy, 'listening');
});

afterAll(async () => {
  proxy?.closeAllConnections();
  proxy?.close();
  await api?.stop();
});

it('takes the initial state over the watch, and applies Ready once per ServiceCIDR despite a slow watch', async () => {
  const names = Array.from({ length: N }, (_, i) => `slow-watch-${i}`);
  for (const [i, name] of names.entries()) await createCIDR(net, name, [`10.210.${i}.0/24`]);
  const { port } = proxy.address() as AddressInfo;
  const ctl = runController({ kubeConfig: loopbackKubeConfig(port), deletionGracePeriodMs: 0 });
  try {
    for (const name of names) await waitReady(net, name);
    // Let every write's watch event arrive and be synced.
    await new Promise((r) => setTimeout(r, 6 * WATCH_DELAY_MS));
    expect(names.map((n) => statusWrites.get(n) ?? 0)).toEqual(names.map(() => 1));
    // One watch per resource, each asking for its initial state; no LIST.
    const reads = requests.filter((r) => r.startsWith('GET '));
    expect(reads).toHaveLength(2);
    for (const resource of ['servicecidrs', 'ipaddresses']) {
      const watch = reads.find((r) => r.startsWith(`GET /apis/networking.k8s.io/v1/${resource}?`));
      expect(watch).toMatch(/[?&]watch=true(&|$)/);
      expect(watch).toMatch(/[?&]sendInitialEvents=true(&|$)/);
      expect(watch).toMatch(/[?&]resourceVersionMatch=NotOlderThan(&|$)/);
    }
  } finally {
    await ctl.stop();
  }
}, 90_000);
