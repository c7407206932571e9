// API clients that say who they are: every request carries a User-Agent naming the component,
// in client-go's shape (`<component>/<version> (<os>/<arch>) kubenode`), instead of the HTTP
// library's default. The API server also derives a write's default field manager from it.
// The view also keeps its connections: client-node makes a new https.Agent (a new TLS context,
// CA parse and handshake) for every request, which made connection setup most of a controller's
// CPU time and a large share of the API server's; the view reuses one keep-alive agent for as
// long as its TLS material is unchanged, as client-go's transport does.
import type { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Cluster, KubeConfig, RequestContext } from '@kubernetes/client-node';
import { fs, http } from '../node-builtins.js';
import { guardedAuthorization } from './credentials.js';

let packageVersion: string | undefined;

function version(): string {
  if (packageVersion === undefined) {
    try {
      const pkg = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
        version?: unknown;
      };
      packageVersion = typeof pkg.version === 'string' ? pkg.version : '0.0.0';
    } catch {
      packageVersion = '0.0.0';
    }
  }
  return packageVersion;
}

const ARCH: Record<string, string> = { x64: 'amd64', ia32: '386' };

/** client-go's DefaultKubernetesUserAgent shape for a kubenode component. */
export function componentUserAgent(component: string): string {
  return `${component}/v${version()} (${process.platform}/${ARCH[process.arch] ?? process.arch}) kubenode`;
}

type AgentOptions = Record<string, unknown>;

/** The TLS options client-node passes to `createAgent`; certificates and keys may be Buffers. */
const AGENT_KEYS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

function sameValue(a: unknown, b: unknown): boolean {
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  return a === b;
}

/**
 * `createAgent` for a view: one keep-alive agent, replaced only when the TLS options change
 * (client-node re-reads certificate files for each request, so a rotated certificate or CA
 * gets a new agent). Proxied clusters keep client-node's own agents.
 */
function cachedAgents(kc: KubeConfig): (cluster: Cluster | null, options: AgentOptions) => unknown {
  let cached: { agent: HttpAgent; options: AgentOptions; server: string } | undefined;
  const create = (kc as unknown as { createAgent(c: Cluster | null, o: AgentOptions): unknown }).createAgent;
  return function (this: KubeConfig, cluster, options) {
    const server = cluster?.server ?? '';
    if (!cluster || cluster.proxyUrl) return create.call(this, cluster, options);
    if (
      cached &&
      cached.server === server &&
      AGENT_KEYS.every((k) => sameValue(cached?.options[k], options[k]))
    ) {
      return cached.agent;
    }
    // A plain-http server is allowed only with skipTLSVerify; client-node throws otherwise.
    if (server.startsWith('http:') && !cluster.skipTLSVerify) return create.call(this, cluster, options);
    // Idle sockets of a replaced agent close on their own: requests in flight keep theirs.
    const agent = server.startsWith('http:')
      ? new http.Agent({ ...options, keepAlive: true })
      : new HttpsAgent({ ...options, keepAlive: true });
    cached = { agent, options: { ...options }, server };
    return agent;
  };
}

/**
 * A view of `kc` whose API clients and watches send `User-Agent: <component>/…`, share one
 * keep-alive connection pool, and fail on bad credentials with a KubeCredentialError that
 * holds no secret. The view inherits everything else (cluster, credentials, later
 * changes) from `kc` itself.
 */
export function withUserAgent(kc: KubeConfig, component: string): KubeConfig {
  const ua = componentUserAgent(component);
  const view = Object.create(kc) as KubeConfig;
  (view as unknown as { createAgent: unknown }).createAgent = cachedAgents(kc);
  // Every request's credentials: trimmed tokens, and failures without the secret in them.
  (view as unknown as { applyAuthorizationHeader: unknown }).applyAuthorizationHeader =
    guardedAuthorization(kc);
  // Generated API clients authenticate each request through this method.
  view.applySecurityAuthentication = async (context: RequestContext) => {
    await kc.applySecurityAuthentication.call(view, context);
    context.setHeaderParam('User-Agent', ua);
  };
  // Watches (informers) build their fetch options here.
  view.applyToFetchOptions = async (opts) => {
    const init = await kc.applyToFetchOptions.call(view, opts);
    const headers = init.headers as unknown as { set?: (k: string, v: string) => void } | undefined;
    headers?.set?.('User-Agent', ua);
    return init;
  };
  return view;
}
