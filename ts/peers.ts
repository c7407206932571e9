// The optional peer dependencies, loaded on first use rather than at import: an agent that only
// admits sysctls never pays for @kubernetes/client-node (~0.5 s, ~60 MB) or prom-client. Both
// load synchronously through require() (client-node is ESM without top-level await, which
// Node ^20.19 / >=22.12 load with require and share with `import`), so constructors stay sync.
import { createRequire } from 'node:module';
import { KubenodeError } from './errors.js';

type ClientNode = typeof import('@kubernetes/client-node');
/** The parts of prom-client kubenode uses. */
type PromClient = Pick<typeof import('prom-client'), 'Registry' | 'Counter' | 'Gauge' | 'Histogram'>;

const require = createRequire(import.meta.url);
const cache = new Map<string, unknown>();

/**
 * The peer's versions that load on Node `nodeVersion` (`v20.19.0`), as an npm spec. client-node
 * 2.x bundles an undici that needs zlib's zstd (Node >= 22): on Node 20 it crashes on import.
 */
export function peerSpec(name: string, nodeVersion: string): string {
  if (name === '@kubernetes/client-node') {
    const major = Number(/^v?(\d+)/.exec(nodeVersion)?.[1] ?? 0);
    return major >= 22 ? `'${name}@^1.4 || ^2'` : `${name}@^1.4`;
  }
  if (name === 'prom-client') return `${name}@^15`;
  return name;
}

function installedVersion(req: NodeJS.Require, name: string): string | undefined {
  try {
    return (req(`${name}/package.json`) as { version?: string }).version;
  } catch {
    return undefined;
  }
}

/**
 * Loads peer `name` through `req`; on failure, a KubenodeError that says whether the peer is
 * missing or installed at a version that does not load here, and which version fits this Node.
 */
export function loadPeer<T>(name: string, needed: string, req: NodeJS.Require, nodeVersion: string): T {
  try {
    return req(name) as T;
  } catch (e) {
    const spec = peerSpec(name, nodeVersion);
    const installed = installedVersion(req, name);
    const what =
      installed === undefined
        ? `${needed} needs the peer dependency ${name}; install it next to kubenode`
        : `${needed} needs the peer dependency ${name}, but ${name} ${installed} does not load on Node ${nodeVersion}; install a version that does`;
    throw new KubenodeError(
      'ERR_KUBENODE_UNSUPPORTED',
      `${what}: npm install ${spec} (${(e as Error)?.message ?? String(e)})`,
      { cause: e },
    );
  }
}

function load<T>(name: string, needed: string): T {
  const hit = cache.get(name);
  if (hit) return hit as T;
  const m = loadPeer<T>(name, needed, require, process.version);
  cache.set(name, m);
  return m;
}

/** `@kubernetes/client-node`, for the informers and API clients of the daemons. */
export function clientNode(): ClientNode {
  return load<ClientNode>('@kubernetes/client-node', 'this Kubernetes API client');
}

/**
 * `prom-client`'s Registry, Counter, Gauge and Histogram, for metrics registered in a caller's
 * registry. Read from their own modules: prom-client's index also loads its Pushgateway (zlib,
 * http, https), its default metrics (v8, perf_hooks), its cluster aggregator and Summary, which a
 * daemon would hold for nothing. The index, with its typed error, when a future layout moves them.
 */
export function promClient(): PromClient {
  const hit = cache.get('prom-client/lib');
  if (hit) return hit as PromClient;
  let m: PromClient;
  try {
    m = {
      Registry: require('prom-client/lib/registry'),
      Counter: require('prom-client/lib/counter'),
      Gauge: require('prom-client/lib/gauge'),
      Histogram: require('prom-client/lib/histogram'),
    };
    if (!Object.values(m).every((c) => typeof c === 'function')) throw new Error('moved');
  } catch {
    m = load<typeof import('prom-client')>('prom-client', 'recording metrics');
  }
  cache.set('prom-client/lib', m);
  return m;
}
