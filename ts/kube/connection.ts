// A KubeConnection (ts/kube/rest.ts) from a kubeconfig's current cluster and user, with no
// @kubernetes/client-node: the TLS material read once, and per request a static token, a token
// file re-read as it rotates (client-go's cached file token source), or basic credentials.
// Only a user with an `exec` or `auth-provider` plugin, or a cluster behind a `proxy-url`, takes
// its credentials from client-node, loaded then and not before.
import type { KubeConfig, User } from '@kubernetes/client-node';
import { KubenodeError } from '../errors.js';
import { cleanAuthorization, credentialFailure, guardedAuthorization } from './credentials.js';
import { rememberCredential } from './redact.js';
import { readRegularFile } from './regular-file.js';
import type { KubeConnection, RequestCredentials, TlsMaterial } from './rest.js';
import { TOKEN_FILE_PROVIDER, TokenFileAuth } from './token-file.js';

/** A kubeconfig cluster entry, in client-node's field names (paths already absolute). */
export interface ClusterEntry {
  name?: string;
  server?: string;
  caData?: string | null;
  caFile?: string | null;
  skipTLSVerify?: boolean | null;
  tlsServerName?: string | null;
  proxyUrl?: string | null;
}

/** A kubeconfig user entry, in client-node's field names (paths already absolute). */
export interface UserEntry {
  name: string;
  token?: string | null;
  tokenFile?: string | null;
  certData?: string | null;
  certFile?: string | null;
  keyData?: string | null;
  keyFile?: string | null;
  username?: string | null;
  password?: string | null;
  exec?: unknown;
  authProvider?: { name?: string; config?: Record<string, unknown> } | null;
  impersonateUser?: string | null;
}

/** Why a user needs client-node, if it does. */
export function pluginOf(
  cluster: ClusterEntry,
  user: UserEntry | undefined,
): 'exec' | 'auth-provider' | undefined {
  if (user?.exec) return 'exec';
  if (user?.authProvider && user.authProvider.name !== TOKEN_FILE_PROVIDER) return 'auth-provider';
  // client-node's agents speak to proxies; this transport does not.
  if (cluster.proxyUrl || user?.impersonateUser) return 'auth-provider';
  return undefined;
}

function configError(message: string): KubenodeError {
  return new KubenodeError('ERR_KUBENODE_INVALID_ARG', message);
}

async function material(
  file: string | null | undefined,
  data: string | null | undefined,
  what: string,
): Promise<Buffer | undefined> {
  if (file) {
    try {
      return await readRegularFile(file);
    } catch (e) {
      throw configError(`cannot read the ${what} file ${file}: ${(e as Error).message}`);
    }
  }
  if (data) return Buffer.from(data, 'base64');
  return undefined;
}

/** The TLS material of a cluster and user, files read now. */
export async function tlsMaterial(cluster: ClusterEntry, user: UserEntry | undefined): Promise<TlsMaterial> {
  const ca = await material(cluster.caFile, cluster.caData, 'certificate authority');
  const cert = await material(user?.certFile, user?.certData, 'client certificate');
  const key = await material(user?.keyFile, user?.keyData, 'client key');
  return {
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
    ...(cluster.skipTLSVerify ? { insecureSkipTLSVerify: true } : {}),
    ...(cluster.tlsServerName ? { serverName: cluster.tlsServerName } : {}),
  };
}

/** A checked, trimmed `Bearer` header value (a KubeCredentialError names the user, never the token). */
function bearer(token: string, user: string): string {
  return cleanAuthorization(`Bearer ${token}`, { name: user } as User);
}

/** Options of {@link connectionFromKubeConfig}. */
export interface ConnectionOptions {
  /** A re-read of a token file failed; the last token read is still used. */
  onTokenStale?: (err: Error, path: string) => void;
  /** The client-node configuration for a plugin user (loaded only when needed). */
  pluginKubeConfig?: () => KubeConfig;
}

/**
 * The connection of `cluster` and `user`. A plugin user (see {@link pluginOf}) needs
 * `options.pluginKubeConfig`; its headers and TLS material come from client-node per request.
 */
export async function leanConnection(
  cluster: ClusterEntry,
  user: UserEntry | undefined,
  options: ConnectionOptions = {},
): Promise<KubeConnection> {
  const server = cluster.server ?? '';
  const name = user?.name ?? '';
  const plugin = pluginOf(cluster, user);
  if (plugin) {
    const make = options.pluginKubeConfig;
    if (!make)
      throw configError(`user ${JSON.stringify(name)} needs a credential plugin, but no client was given`);
    return {
      server,
      tls: await tlsMaterial(cluster, undefined),
      user: name,
      plugin,
      credentials: pluginCredentials(make),
    };
  }
  const tls = await tlsMaterial(cluster, user);
  let credentials: () => Promise<RequestCredentials>;
  const tokenPath = user?.tokenFile ?? (user?.authProvider?.config?.path as string | undefined);
  if (user?.token) {
    const authorization = bearer(user.token, name);
    credentials = async () => ({ authorization });
  } else if (tokenPath) {
    const auth = new TokenFileAuth(options.onTokenStale);
    const entry = { name, authProvider: { name: TOKEN_FILE_PROVIDER, config: { path: tokenPath } } };
    credentials = async () => {
      const opts: { headers?: Record<string, unknown> } = {};
      try {
        await auth.applyAuthentication(entry as never, opts);
      } catch (e) {
        throw credentialFailure(entry as never, e);
      }
      return {
        authorization: bearer(String(opts.headers?.Authorization ?? '').replace(/^Bearer\s+/, ''), name),
      };
    };
  } else if (user?.username) {
    const authorization = `Basic ${Buffer.from(`${user.username}:${user.password ?? ''}`).toString('base64')}`;
    rememberCredential(authorization.slice(6));
    credentials = async () => ({ authorization });
  } else {
    credentials = async () => ({});
  }
  const files = cluster.caFile || user?.certFile || user?.keyFile;
  if (files) credentials = withFileTls(credentials, tls, () => tlsMaterial(cluster, user));
  return { server, tls, user: name, credentials };
}

/** How long TLS files read are used before they are read again (as the token file). */
const TLS_FILE_PERIOD_MS = 60_000;

/**
 * `credentials` that also hand out the TLS files' current contents, re-read once a minute, so a
 * rotated CA or client certificate is used without a restart (a changed one opens a new
 * session); a failed re-read keeps the last material read.
 */
function withFileTls(
  credentials: () => Promise<RequestCredentials>,
  first: TlsMaterial,
  read: () => Promise<TlsMaterial>,
): () => Promise<RequestCredentials> {
  let tls = first;
  let readAt = performance.now();
  return async () => {
    if (performance.now() - readAt >= TLS_FILE_PERIOD_MS) {
      readAt = performance.now();
      tls = await read().catch(() => tls);
    }
    return { ...(await credentials()), tls };
  };
}

interface HttpsOpts {
  headers?: Record<string, unknown>;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  rejectUnauthorized?: boolean;
  servername?: string;
  auth?: string;
}

/** Per-request credentials from client-node (exec and auth-provider plugins, proxies). */
function pluginCredentials(make: () => KubeConfig): () => Promise<RequestCredentials> {
  let view: KubeConfig | undefined;
  return async () => {
    if (!view) {
      const kc = make();
      view = Object.create(kc) as KubeConfig;
      (view as unknown as { applyAuthorizationHeader: unknown }).applyAuthorizationHeader =
        guardedAuthorization(kc);
    }
    const opts: HttpsOpts = { headers: {} };
    try {
      await (view as unknown as { applyToHTTPSOptions(o: HttpsOpts): Promise<void> }).applyToHTTPSOptions(
        opts,
      );
    } catch (e) {
      throw credentialFailure(view.getCurrentUser(), e);
    }
    let authorization = opts.headers?.Authorization as string | undefined;
    if (opts.auth) authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
    const tls: TlsMaterial = {
      ...(opts.ca ? { ca: Buffer.from(opts.ca) } : {}),
      ...(opts.cert ? { cert: Buffer.from(opts.cert) } : {}),
      ...(opts.key ? { key: Buffer.from(opts.key) } : {}),
      ...(opts.rejectUnauthorized === false ? { insecureSkipTLSVerify: true } : {}),
      ...(opts.servername ? { serverName: opts.servername } : {}),
    };
    return { ...(authorization ? { authorization } : {}), tls };
  };
}

/** True for a {@link KubeConnection} (as opposed to a client-node `KubeConfig`). */
export function isKubeConnection(c: unknown): c is KubeConnection {
  const o = c as Partial<KubeConnection> | null;
  return typeof o?.server === 'string' && typeof o.credentials === 'function';
}

/**
 * The connection of a client-node `KubeConfig`'s current context, for embedders that pass one:
 * the same transport, with credentials from `kc` when its user has a plugin.
 */
export async function connectionFromKubeConfig(
  kc: KubeConfig,
  options: ConnectionOptions = {},
): Promise<KubeConnection> {
  const cluster = kc.getCurrentCluster();
  if (!cluster?.server) throw configError('the kubeconfig has no current cluster with a server');
  const user = kc.getCurrentUser() ?? undefined;
  const entry = user ? (user as unknown as UserEntry) : undefined;
  return leanConnection(cluster as ClusterEntry, entry, { ...options, pluginKubeConfig: () => kc });
}
