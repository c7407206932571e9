// The daemons' HTTP endpoints: `/healthz` (the process serves), `/readyz` (its caches are
// synced) and `/metrics` (its prom-client registry). `--health-addr` serves the first two,
// `--metrics-addr` the metrics (and `/healthz`, as kube-proxy's metrics server does); when both
// name the same address one listener serves all three.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface HealthOptions {
  healthAddr?: string | undefined;
  metricsAddr?: string | undefined;
  registry: Registry;
  /** Why the daemon is not ready, or `undefined` when it is. */
  notReady: () => string | undefined;
}

export interface HealthServer {
  /** The bound `host:port` of each listener (port 0 resolved). */
  readonly addresses: string[];
  close(): Promise<void>;
}

/** Parses `HOST:PORT` (`[v6]:PORT` for IPv6); undefined when malformed. */
export function parseAddr(s: string): { host: string; port: number } | undefined {
  const m = /^(\[[^\]]+\]|[^:]*):(\d{1,5})$/.exec(s);
  const port = Number(m?.[2]);
  if (!m || !(port >= 0 && port <= 65535)) return undefined;
  return { host: (m[1] as string).replace(/^\[|\]$/g, '') || '0.0.0.0', port };
}

type Route = 'healthz' | 'readyz' | 'metrics';

function handler(routes: Set<Route>, o: HealthOptions) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0] as string;
    const route = path.slice(1) as Route;
    if (!routes.has(route) || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('404 page not found\n');
      return;
    }
    if (route === 'metrics') {
      o.registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'Content-Type': o.registry.contentType });
          res.end(text);
        },
        (e) => {
          res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
          res.end(`${(e as Error).message ?? String(e)}\n`);
        },
      );
      return;
    }
    const why = route === 'readyz' ? o.notReady() : undefined;
    // Like the API server's checks: 200 "ok", or 500 with the reason.
    res.writeHead(why ? 500 : 200, {
      'Content-Type': 'text/plain; charset=utf-8',
      'X-Content-Type-Options': 'nosniff',
    });
    res.end(why ? `[-]${why}\nreadyz check failed\n` : 'ok');
  };
}

function listen(server: Server, host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const a = server.address() as AddressInfo;
      resolve(a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`);
    });
  });
}

/**
 * Starts the listeners. Rejects with the failing address when one cannot bind (closing any
 * already bound). The listeners do not keep the process alive after `close()`.
 */
export async function serveHealth(o: HealthOptions): Promise<HealthServer> {
  const wanted = new Map<string, Set<Route>>();
  const add = (addr: string | undefined, routes: Route[]) => {
    if (addr === undefined) return;
    const set = wanted.get(addr) ?? new Set<Route>();
    for (const r of routes) set.add(r);
    wanted.set(addr, set);
  };
  add(o.healthAddr, ['healthz', 'readyz']);
  add(o.metricsAddr, ['metrics', 'healthz']);
  const servers: Server[] = [];
  const addresses: string[] = [];
  const close = () =>
    Promise.all(
      servers.map(
        (s) =>
          new Promise<void>((r) => {
            s.close(() => r());
            s.closeAllConnections();
          }),
      ),
    ).then(() => undefined);
  for (const [addr, routes] of wanted) {
    const parsed = parseAddr(addr);
    if (!parsed) {
      await close();
      throw new Error(`${JSON.stringify(addr)} is not HOST:PORT`);
    }
    const server = createServer(handler(routes, o));
    try {
      addresses.push(await listen(server, parsed.host, parsed.port));
    } catch (e) {
      await close();
      throw new Error(`cannot listen on ${addr}: ${(e as Error).message}`);
    }
    servers.push(server);
  }
  return { addresses, close };
}
