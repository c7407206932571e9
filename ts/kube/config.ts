// Where the daemons find their cluster, in the order kube components use: the --kubeconfig
// flag, then KUBECONFIG, then the in-cluster configuration (service-account token and CA,
// KUBERNETES_SERVICE_HOST/PORT). Nothing else: no ~/.kube/config on a node image, and never
// client-node's last resort http://localhost:8080, which would talk to whatever listens there.
import { existsSync, readFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { delimiter, join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { KubenodeError } from '../errors.js';
import { clientNode } from '../peers.js';

/** The service-account directory every pod gets (client-go's `rest.InClusterConfig`). */
export const SERVICEACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** Overrides {@link SERVICEACCOUNT_DIR}, e.g. for a projected token mounted elsewhere. */
export const SERVICEACCOUNT_DIR_ENV = 'KUBENODE_SERVICEACCOUNT_DIR';

export type KubeConfigSource = 'flag' | 'KUBECONFIG' | 'in-cluster';

export interface LoadedKubeConfig {
  kubeConfig: KubeConfig;
  source: KubeConfigSource;
  /** The file or server it came from, for the start-up log line. */
  origin: string;
}

function configError(message: string, cause?: unknown): KubenodeError {
  return new KubenodeError('ERR_KUBENODE_INVALID_ARG', message, cause === undefined ? {} : { cause });
}

function fromFiles(files: string[], what: string): KubeConfig {
  const kc = new (clientNode().KubeConfig)();
  try {
    kc.loadFromFile(files[0] as string);
    for (const f of files.slice(1)) {
      const more = new (clientNode().KubeConfig)();
      more.loadFromFile(f);
      kc.mergeConfig(more);
    }
  } catch (e) {
    // client-node reports an empty or non-mapping file as a TypeError from its own internals.
    const why = e instanceof TypeError ? 'not a kubeconfig document' : (e as Error).message;
    throw configError(`cannot load kubeconfig ${what}: ${why}`, e);
  }
  if (!kc.getCurrentCluster()?.server) {
    throw configError(`kubeconfig ${what} has no current cluster with a server`);
  }
  return kc;
}

/**
 * client-go's `rest.InClusterConfig`: always https, the CA and a token file re-read as it
 * rotates (client-node's tokenFile provider re-reads it every minute). Unlike client-go a
 * missing CA is an error rather than a fallback to the system roots. client-node's own
 * `loadFromCluster` is not used: it only takes a prefix to the fixed path, switches to plain
 * http on ports 80/8080/8001, and checks neither the variables nor the files (an unset host
 * becomes `https://undefined:undefined`).
 */
export function inClusterConfig(env: NodeJS.ProcessEnv = process.env): KubeConfig {
  const host = env.KUBERNETES_SERVICE_HOST ?? '';
  const port = env.KUBERNETES_SERVICE_PORT ?? '';
  if (host === '' || port === '') {
    throw configError(
      'unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined',
    );
  }
  const dir = env[SERVICEACCOUNT_DIR_ENV] || SERVICEACCOUNT_DIR;
  const tokenFile = join(dir, 'token');
  const caFile = join(dir, 'ca.crt');
  for (const [what, file] of [
    ['service-account token', tokenFile],
    ['service-account CA', caFile],
  ] as const) {
    try {
      if (readFileSync(file, 'utf8').trim() === '') throw new Error('file is empty');
    } catch (e) {
      throw configError(
        `unable to load in-cluster configuration: cannot read the ${what} ${file}: ${(e as Error).message}`,
        e,
      );
    }
  }
  const namespaceFile = join(dir, 'namespace');
  const namespace = existsSync(namespaceFile) ? readFileSync(namespaceFile, 'utf8').trim() : undefined;
  const server = `https://${isIPv6(host) ? `[${host}]` : host}:${port}`;
  const kc = new (clientNode().KubeConfig)();
  kc.loadFromOptions({
    clusters: [{ name: 'inCluster', server, caFile, skipTLSVerify: false }],
    users: [{ name: 'inClusterUser', authProvider: { name: 'tokenFile', config: { tokenFile } } }],
    contexts: [{ name: 'inClusterContext', cluster: 'inCluster', user: 'inClusterUser', namespace }],
    currentContext: 'inClusterContext',
  });
  return kc;
}

/**
 * The daemons' configuration: `file` (the --kubeconfig flag), else KUBECONFIG, else in-cluster.
 * Throws a KubenodeError (code ERR_KUBENODE_INVALID_ARG) that says what is missing.
 */
export function loadKubeConfig(file?: string, env: NodeJS.ProcessEnv = process.env): LoadedKubeConfig {
  if (file) return { kubeConfig: fromFiles([file], file), source: 'flag', origin: file };
  const list = (env.KUBECONFIG ?? '').split(delimiter).filter((f) => f !== '');
  if (list.length > 0) {
    return {
      kubeConfig: fromFiles(list, `${list.join(delimiter)} (KUBECONFIG)`),
      source: 'KUBECONFIG',
      origin: list.join(delimiter),
    };
  }
  if (!env.KUBERNETES_SERVICE_HOST && !env.KUBERNETES_SERVICE_PORT) {
    throw configError(
      'no cluster configured: no --kubeconfig flag, KUBECONFIG is not set, and not running in a cluster ' +
        '(KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set)',
    );
  }
  const kubeConfig = inClusterConfig(env);
  return { kubeConfig, source: 'in-cluster', origin: kubeConfig.getCurrentCluster()?.server ?? '' };
}
