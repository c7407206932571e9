// API clients that say who they are: every request carries a User-Agent naming the component,
// in client-go's shape (`<component>/<version> (<os>/<arch>) kubenode`), instead of the HTTP
// library's default. The API server also derives a write's default field manager from it.
import { readFileSync } from 'node:fs';
import type { KubeConfig, RequestContext } from '@kubernetes/client-node';

let packageVersion: string | undefined;

function version(): string {
  if (packageVersion === undefined) {
    try {
      const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
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

/**
 * A view of `kc` whose API clients and watches send `User-Agent: <component>/…`. The view
 * inherits everything else (cluster, credentials, later changes) from `kc` itself.
 */
export function withUserAgent(kc: KubeConfig, component: string): KubeConfig {
  const ua = componentUserAgent(component);
  const view = Object.create(kc) as KubeConfig;
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
