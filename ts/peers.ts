// The optional peer dependencies, loaded on first use rather than at import: an agent that only
// admits sysctls never pays for @kubernetes/client-node (~0.5 s, ~60 MB) or prom-client. Both
// load synchronously through require() (client-node is ESM without top-level await, which
// Node ^20.19 / >=22.12 load with require and share with `import`), so constructors stay sync.
import { createRequire } from 'node:module';
import { KubenodeError } from './errors.js';

type ClientNode = typeof import('@kubernetes/client-node');
type PromClient = typeof import('prom-client');

const require = createRequire(import.meta.url);
const cache = new Map<string, unknown>();

function load<T>(name: string, needed: string): T {
  const hit = cache.get(name);
  if (hit) return hit as T;
  try {
    const m = require(name) as T;
    cache.set(name, m);
    return m;
  } catch (e) {
    throw new KubenodeError(
      'ERR_KUBENODE_UNSUPPORTED',
      `${needed} needs the peer dependency ${name}; install it next to kubenode (${(e as Error)?.message ?? String(e)})`,
      { cause: e },
    );
  }
}

/** `@kubernetes/client-node`, for the informers and API clients of the daemons. */
export function clientNode(): ClientNode {
  return load<ClientNode>('@kubernetes/client-node', 'this Kubernetes API client');
}

/** `prom-client`, for metrics registered in a caller's registry. */
export function promClient(): PromClient {
  return load<PromClient>('prom-client', 'recording metrics');
}
