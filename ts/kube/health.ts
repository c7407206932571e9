// The daemons' HTTP endpoints: `/healthz` and `/livez` (the process serves), `/readyz` (its
// caches are synced) and `/metrics` (its prom-client registry). `healthAddr` serves the first
// three, `metricsAddr` the metrics (and `/healthz`, as kube-proxy's metrics server does); when
// both name the same address one listener serves all. With `tls` the listeners speak HTTPS and
// `authorizeMetrics` decides who may read `/metrics`, as kube-controller-manager's secure port.
//
// The listeners are bounded as a component server is, because on hostNetwork anything on the
// node can connect: a request's headers must arrive within LISTENER_LIMITS.headersTimeoutMs
// and fit in maxHeaderBytes, and past maxConnections the oldest connection that has not sent a
// complete request yet is closed to make room, so a flood of slow connections can neither grow
// the heap nor use up the file descriptors a probe needs.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Registry } from 'prom-client';
import { http } from '../node-builtins.js';

/** The bounds of a listener. */
export interface ListenerLimits {
  maxConnections: number;
  maxHeaderBytes: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
}

/** The bounds of every daemon listener (README: "Listener limits"). */
export const LISTENER_LIMITS: Readonly<ListenerLimits> = {
  /** Open connections per listener; past it the oldest without a complete request is closed. */
  maxConnections: 512,
  /** Request line and headers, in bytes (a larger request gets 431). */
  maxHeaderBytes: 8 * 1024,
  /** Time for the request line and headers to arrive. */
  headersTimeoutMs: 10_000,
  /** Time for a whole request to arrive. */
  requestTimeoutMs: 30_000,
  /** Idle time of a kept-alive connection between requests. */
  keepAliveTimeoutMs: 5_000,
};

/** Who may read `/metrics`: 200 to serve, 401/403 with the reason to refuse. */
export type MetricsAuthorizer = (
  req: IncomingMessage,
) => Promise<{ status: 200 | 401 | 403 | 429; reason?: string }>;

export interface HealthOptions {
  healthAddr?: string | undefined;
  metricsAddr?: string | undefined;
  registry: Registry;
  /** Why the daemon is not ready, or `undefined` when it is. */
  notReady: () => string | undefined;
  /** Serve HTTPS with this PEM certificate chain and key. */
  tls?: { cert: string; key: string } | undefined;
  /** Asked before each `/metrics` response; default: everyone may read. */
  authorizeMetrics?: MetricsAuthorizer | undefined;
  /** Overrides of LISTENER_LIMITS (tests). */
  limits?: Partial<ListenerLimits>;
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

type Route = 'healthz' | 'livez' | 'readyz' | 'metrics';

const TEXT = { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' };

function serveMetrics(o: HealthOptions, res: ServerResponse): void {
  o.registry.metrics().then(
    (text) => {
      res.writeHead(200, { 'Content-Type': o.registry.contentType });
      res.end(text);
    },
    (e) => {
      res.writeHead(500, TEXT);
      res.end(`${(e as Error).message ?? String(e)}\n`);
    },
  );
}

function handler(routes: Set<Route>, o: HealthOptions) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0] as string;
    const route = path.slice(1) as Route;
    if (!routes.has(route) || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, TEXT);
      res.end('404 page not found\n');
      return;
    }
    if (route === 'metrics') {
      if (!o.authorizeMetrics) return serveMetrics(o, res);
      o.authorizeMetrics(req).then(
        (d) => {
          if (d.status === 200) return serveMetrics(o, res);
          res.writeHead(d.status, TEXT);
          res.end(`${d.reason ?? (d.status === 401 ? 'Unauthorized' : 'Forbidden')}\n`);
        },
        (e) => {
          // The API server could not be asked: refuse, never serve unchecked.
          res.writeHead(500, TEXT);
          res.end(`Internal Server Error: ${(e as Error).message ?? String(e)}\n`);
        },
      );
      return;
    }
    const why = route === 'readyz' ? o.notReady() : undefined;
    // Like the API server's checks: 200 "ok", or 500 with the reason.
    res.writeHead(why ? 500 : 200, TEXT);
    res.end(why ? `[-]${why}\nreadyz check failed\n` : 'ok');
  };
}

/**
 * Applies the connection cap: each new connection past `max` closes the oldest one still
 * waiting for a complete request (a probe's connection is the newest, so it is not the one
 * closed). Connections serving a request are never closed to make room.
 */
function capConnections(server: Server, max: number): void {
  // Insertion order is accept order: the first waiting entry is the oldest.
  const waiting = new Set<Socket>();
  let open = 0;
  server.on('connection', (socket: Socket) => {
    open++;
    waiting.add(socket);
    socket.once('close', () => {
      open--;
      waiting.delete(socket);
    });
    if (open > max) {
      const oldest = waiting.values().next().value;
      if (oldest && oldest !== socket) {
        waiting.delete(oldest);
        oldest.destroy();
      }
    }
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    // Over HTTPS the request's socket is the TLS socket wrapped around the accepted one, which is
    // what this set holds and closes (Node keeps it as `_parent`).
    const socket = (req.socket as Socket & { _parent?: Socket })._parent ?? req.socket;
    waiting.delete(socket);
    // Back in the queue once the response is written: an idle kept-alive connection may go.
    res.once('finish', () => {
      if (!socket.destroyed) waiting.add(socket);
    });
  });
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

function makeServer(routes: Set<Route>, o: HealthOptions): Server {
  const l = { ...LISTENER_LIMITS, ...o.limits };
  const options = {
    maxHeaderSize: l.maxHeaderBytes,
    headersTimeout: l.headersTimeoutMs,
    requestTimeout: l.requestTimeoutMs,
    // How often the two timeouts above are checked: a slow connection lives at most 1.5 times
    // its headers timeout (Node's default, 30 s, would give it three), and an idle daemon wakes
    // for it every 5 s, not every second.
    connectionsCheckingInterval: l.headersTimeoutMs / 2,
  };
  const h = handler(routes, o);
  const server: Server = o.tls
    ? (createHttpsServer({ ...options, cert: o.tls.cert, key: o.tls.key }, h) as unknown as Server)
    : http.createServer(options, h);
  server.keepAliveTimeout = l.keepAliveTimeoutMs;
  // A TLS handshake that never finishes is a slow connection too.
  if (o.tls) (server as unknown as { setTimeout(ms: number): void }).setTimeout(l.requestTimeoutMs);
  capConnections(server, l.maxConnections);
  return server;
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
  add(o.healthAddr, ['healthz', 'livez', 'readyz']);
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
    const server = makeServer(routes, o);
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
