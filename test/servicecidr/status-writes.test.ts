// One status write per ServiceCIDR even when the watch lags behind the writes: the controller
// talks to the real kube-apiserver through a loopback proxy that delays every watch stream
// (a slow informer, as on a loaded node), and the proxy counts the status writes it forwards.
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

/** Forwards to the API server; each chunk of a watch response goes out WATCH_DELAY_MS late. */
function forward(req: IncomingMessage, res: ServerResponse): void {
  const url = req.url ?? '/';
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

it('applies Ready once per ServiceCIDR when its own writes come back over a slow watch', async () => {
  const names = Array.from({ length: N }, (_, i) => `slow-watch-${i}`);
  for (const [i, name] of names.entries()) await createCIDR(net, name, [`10.210.${i}.0/24`]);
  const { port } = proxy.address() as AddressInfo;
  const ctl = runController({ kubeConfig: loopbackKubeConfig(port), deletionGracePeriodMs: 0 });
  try {
    for (const name of names) await waitReady(net, name);
    // Let every write's watch event arrive and be synced.
    await new Promise((r) => setTimeout(r, 6 * WATCH_DELAY_MS));
    expect(names.map((n) => statusWrites.get(n) ?? 0)).toEqual(names.map(() => 1));
  } finally {
    await ctl.stop();
  }
}, 90_000);
