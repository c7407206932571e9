// The controller's API client: the lean transport on a connection, or on the current context of
// an embedder's client-node KubeConfig (read at the first request, since turning it into a
// connection reads its certificate files).
import type { KubeConfig } from '@kubernetes/client-node';
import { connectionFromKubeConfig } from '../kube/connection.js';
import { type KubeConnection, type KubeRest, type RestLimits, restClient } from '../kube/rest.js';

export function controllerRest(
  source: KubeConnection | KubeConfig,
  component: string,
  limits: RestLimits | undefined,
): KubeRest {
  if (!('getCurrentCluster' in source)) return restClient(source, component, limits);
  let made: KubeRest | undefined;
  let making: Promise<KubeRest> | undefined;
  const client = (): Promise<KubeRest> => {
    if (made) return Promise.resolve(made);
    // A failed read (an unreadable CA file, say) is tried again by the next request.
    making ??= connectionFromKubeConfig(source).then(
      (conn) => {
        made = restClient(conn, component, limits);
        return made;
      },
      (e: unknown) => {
        making = undefined;
        throw e;
      },
    );
    return making;
  };
  return {
    get connection(): KubeConnection {
      if (!made) throw new Error('the connection is made at the first request');
      return made.connection;
    },
    get userAgent() {
      return made?.userAgent ?? '';
    },
    get protocol() {
      return made?.protocol;
    },
    get sessionsOpened() {
      return made?.sessionsOpened ?? 0;
    },
    request: async (req) => (await client()).request(req),
    watch: async (path, query, onEvent, signal) => (await client()).watch(path, query, onEvent, signal),
    close() {
      made?.close();
    },
  };
}
