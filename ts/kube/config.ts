// Where the daemons find their cluster, in the order kube components use: the --kubeconfig
// flag, then KUBECONFIG, then the in-cluster configuration (service-account token and CA,
// KUBERNETES_SERVICE_HOST/PORT). Nothing else: no ~/.kube/config on a node image, and never
// client-node's last resort http://localhost:8080, which would talk to whatever listens there.
import { delimiter, dirname, join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { KubenodeError } from '../errors.js';
import { net } from '../node-builtins.js';
import { clientNode } from '../peers.js';
import { leanConnection, pluginOf } from './connection.js';
import { KubeCredentialError } from './credentials.js';
import { currentContext, KubeconfigSyntaxError, type KubeconfigText } from './kubeconfig-file.js';
import { redactCredentials } from './redact.js';
import { readRegularFile } from './regular-file.js';
import type { KubeConnection } from './rest.js';
import { readTokenFile, TOKEN_FILE_PROVIDER, TokenFileAuth } from './token-file.js';

/** The service-account directory every pod gets (client-go's `rest.InClusterConfig`). */
export const SERVICEACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** Overrides {@link SERVICEACCOUNT_DIR}, e.g. for a projected token mounted elsewhere. */
export const SERVICEACCOUNT_DIR_ENV = 'KUBENODE_SERVICEACCOUNT_DIR';

/** Where the configuration came from: `--kubeconfig`, the KUBECONFIG variable, or the pod's service account. */
export type KubeConfigSource = 'flag' | 'KUBECONFIG' | 'in-cluster';

/** A cluster configuration as {@link loadKubeConfig} found it. */
export interface LoadedKubeConfig {
  /**
   * The lean transport's connection (ts/kube/rest.ts): reaching the API server through it loads
   * @kubernetes/client-node only when the user needs an exec or auth-provider plugin.
   */
  connection: KubeConnection;
  /** The same cluster as a client-node `KubeConfig`: reading it loads client-node. */
  readonly kubeConfig: KubeConfig;
  /** Where it came from. */
  source: KubeConfigSource;
  /** The file or server it came from, for the start-up log line (no credentials in it). */
  origin: string;
  /** The in-cluster token file's reader: set its `onStale` to hear of failed re-reads. */
  tokenFile?: TokenFileAuth;
}

/** Options of {@link loadKubeConfig} (and of its in-cluster reading). */
export interface LoadOptions {
  /** The environment to read KUBECONFIG and the in-cluster variables from (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** A re-read of the in-cluster token file failed; the last token read is still used. */
  onTokenStale?: (err: Error, path: string) => void;
}

function configError(message: string, cause?: unknown): KubenodeError {
  return new KubenodeError('ERR_KUBENODE_INVALID_ARG', message, cause === undefined ? {} : { cause });
}

/** A file of the configuration, read by the rule of {@link readRegularFile}; errors name it. */
async function readConfigFile(file: string, what: string, prefix: string): Promise<string> {
  try {
    return (await readRegularFile(file)).toString('utf8');
  } catch (e) {
    throw configError(`${prefix}cannot read the ${what} ${file}: ${(e as Error).message}`, e);
  }
}

/** `files` as client-node reads them (for a plugin user, and for callers of `kubeConfig`). */
function clientNodeConfig(texts: KubeconfigText[], what: string): KubeConfig {
  const { KubeConfig } = clientNode();
  const kc = new KubeConfig();
  for (const [i, f] of texts.entries()) {
    try {
      const one = i === 0 ? kc : new KubeConfig();
      one.loadFromString(f.text);
      one.makePathsAbsolute(dirname(f.path));
      if (one !== kc) kc.mergeConfig(one);
    } catch (e) {
      // client-node reports an empty or non-mapping file as a TypeError from its own internals;
      // a parser's message may quote the file, credentials included.
      const why =
        e instanceof TypeError ? 'not a kubeconfig document' : redactCredentials((e as Error).message);
      throw configError(`cannot load kubeconfig ${what}: ${why}`);
    }
  }
  return kc;
}

/** A `kubeConfig` property made on first read (it loads client-node). */
function lazyKubeConfig<T extends object>(
  target: T,
  make: () => KubeConfig,
): T & { readonly kubeConfig: KubeConfig } {
  let kc: KubeConfig | undefined;
  return Object.defineProperty(target, 'kubeConfig', {
    enumerable: true,
    get: () => {
      kc ??= make();
      return kc;
    },
  }) as T & { readonly kubeConfig: KubeConfig };
}

async function fromFiles(
  files: string[],
  what: string,
  options: LoadOptions,
): Promise<{ connection: KubeConnection; kubeConfig: KubeConfig }> {
  const texts: KubeconfigText[] = [];
  for (const f of files) {
    texts.push({ path: f, text: await readConfigFile(f, 'kubeconfig', `cannot load kubeconfig ${what}: `) });
  }
  let ctx: ReturnType<typeof currentContext>;
  try {
    ctx = currentContext(texts);
  } catch (e) {
    const why =
      e instanceof KubeconfigSyntaxError && e.document ? e.message : redactCredentials((e as Error).message);
    throw configError(`cannot load kubeconfig ${what}: ${why}`);
  }
  if (!ctx.cluster?.server) {
    throw configError(`kubeconfig ${what} has no current cluster with a server`);
  }
  const make = () => clientNodeConfig(texts, what);
  let connection: KubeConnection;
  try {
    connection = await leanConnection(ctx.cluster, ctx.user, {
      ...(options.onTokenStale ? { onTokenStale: options.onTokenStale } : {}),
      pluginKubeConfig: make,
    });
  } catch (e) {
    // A bad static token or an unreadable TLS file: the configuration is wrong, not the moment.
    if (e instanceof KubeCredentialError || e instanceof KubenodeError) {
      throw configError(`kubeconfig ${what}: ${e.message}`);
    }
    throw e;
  }
  // A plugin user's configuration must load in client-node now, not at the first request.
  const kc = pluginOf(ctx.cluster, ctx.user) ? make() : undefined;
  return lazyKubeConfig({ connection }, () => kc ?? make());
}

/**
 * client-go's `rest.InClusterConfig`: always https, the CA and a token file re-read as it
 * rotates (re-read every minute, trimmed, the last token kept while a re-read fails). Unlike
 * client-go a missing CA is an error rather than a fallback to the system roots, and every
 * file must be a regular file of bounded size. client-node's own
 * `loadFromCluster` is not used: it only takes a prefix to the fixed path, switches to plain
 * http on ports 80/8080/8001, and checks neither the variables nor the files (an unset host
 * becomes `https://undefined:undefined`).
 */
export async function inClusterConfig(
  options: LoadOptions = {},
): Promise<{ kubeConfig: KubeConfig; tokenFile: TokenFileAuth; connection: KubeConnection }> {
  const env = options.env ?? process.env;
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
  const prefix = 'unable to load in-cluster configuration: ';
  try {
    await readTokenFile(tokenFile);
  } catch (e) {
    throw configError(
      `${prefix}cannot read the service-account token ${tokenFile}: ${(e as Error).message}`,
      e,
    );
  }
  if ((await readConfigFile(caFile, 'service-account CA', prefix)).trim() === '') {
    throw configError(`${prefix}cannot read the service-account CA ${caFile}: file is empty`);
  }
  // The namespace file is optional (client-go falls back to "default"), but when present it is
  // read by the same rule.
  const namespaceFile = join(dir, 'namespace');
  let namespace: string | undefined;
  try {
    namespace = (await readRegularFile(namespaceFile)).toString('utf8').trim();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw configError(
        `${prefix}cannot read the service-account namespace ${namespaceFile}: ${(e as Error).message}`,
        e,
      );
    }
  }
  const server = `https://${net.isIPv6(host) ? `[${host}]` : host}:${port}`;
  const auth = new TokenFileAuth(options.onTokenStale);
  const connection = await leanConnection(
    { name: 'inCluster', server, caFile },
    { name: 'inClusterUser', tokenFile },
    options.onTokenStale ? { onTokenStale: options.onTokenStale } : {},
  );
  const make = () => {
    const kc = new (clientNode().KubeConfig)();
    kc.addAuthenticator(auth);
    kc.loadFromOptions({
      clusters: [{ name: 'inCluster', server, caFile, skipTLSVerify: false }],
      users: [
        { name: 'inClusterUser', authProvider: { name: TOKEN_FILE_PROVIDER, config: { path: tokenFile } } },
      ],
      contexts: [{ name: 'inClusterContext', cluster: 'inCluster', user: 'inClusterUser', namespace }],
      currentContext: 'inClusterContext',
    });
    return kc;
  };
  return lazyKubeConfig({ tokenFile: auth, connection }, make);
}

/**
 * The daemons' configuration: `file` (the --kubeconfig flag), else KUBECONFIG, else in-cluster.
 * Rejects with a KubenodeError (code ERR_KUBENODE_INVALID_ARG) that says what is missing or
 * unreadable (naming the file) and never quotes a credential.
 */
export async function loadKubeConfig(file?: string, options: LoadOptions = {}): Promise<LoadedKubeConfig> {
  const env = options.env ?? process.env;
  if (file) return lazyFrom(await fromFiles([file], file, options), { source: 'flag', origin: file });
  const list = (env.KUBECONFIG ?? '').split(delimiter).filter((f) => f !== '');
  if (list.length > 0) {
    return lazyFrom(await fromFiles(list, `${list.join(delimiter)} (KUBECONFIG)`, options), {
      source: 'KUBECONFIG',
      origin: list.join(delimiter),
    });
  }
  if (!env.KUBERNETES_SERVICE_HOST && !env.KUBERNETES_SERVICE_PORT) {
    throw configError(
      'no cluster configured: no --kubeconfig flag, KUBECONFIG is not set, and not running in a cluster ' +
        '(KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set)',
    );
  }
  const loaded = await inClusterConfig({ ...options, env });
  return lazyFrom(loaded, {
    source: 'in-cluster',
    origin: redactCredentials(loaded.connection.server),
    tokenFile: loaded.tokenFile,
  });
}

/** `extra` with the connection and the lazy `kubeConfig` of `from` (without reading it). */
function lazyFrom(
  from: { connection: KubeConnection; readonly kubeConfig: KubeConfig },
  extra: Omit<LoadedKubeConfig, 'connection' | 'kubeConfig'>,
): LoadedKubeConfig {
  return lazyKubeConfig({ ...extra, connection: from.connection }, () => from.kubeConfig);
}
