// Kubeconfig files read without @kubernetes/client-node: the YAML parsed, several files merged
// as client-go merges KUBECONFIG (the first file to set current-context, and the first entry of
// each name, win), relative paths made absolute against the file that holds them, and the
// current context's cluster and user picked out in client-node's field names.
import { dirname, isAbsolute, join } from 'node:path';
import { yaml } from '../yaml-lazy.js';
import type { ClusterEntry, UserEntry } from './connection.js';

/** One file's text and where it lives. */
export interface KubeconfigText {
  path: string;
  text: string;
}

export interface CurrentContext {
  cluster: ClusterEntry | undefined;
  user: UserEntry | undefined;
  namespace: string | undefined;
}

/** The parse failed; `document` when the file is not a mapping at all. */
export class KubeconfigSyntaxError extends Error {
  constructor(
    message: string,
    readonly document: boolean,
  ) {
    super(message);
  }
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

function absolute(root: string, file: string | undefined): string | undefined {
  if (!file) return undefined;
  return isAbsolute(file) ? file : join(root, file);
}

function named(list: unknown): Map<string, Obj> {
  const out = new Map<string, Obj>();
  if (!Array.isArray(list)) return out;
  for (const e of list) if (isObj(e) && typeof e.name === 'string') out.set(e.name, e);
  return out;
}

function cluster(name: string, c: Obj, root: string): ClusterEntry {
  return {
    name,
    ...(str(c.server) ? { server: str(c.server) } : {}),
    caData: str(c['certificate-authority-data']) ?? null,
    caFile: absolute(root, str(c['certificate-authority'])) ?? null,
    skipTLSVerify: c['insecure-skip-tls-verify'] === true,
    tlsServerName: str(c['tls-server-name']) ?? null,
    proxyUrl: str(c['proxy-url']) ?? null,
  };
}

function user(name: string, u: Obj, root: string): UserEntry {
  const exec = isObj(u.exec) ? u.exec : undefined;
  return {
    name,
    token: str(u.token) ?? null,
    tokenFile: absolute(root, str(u.tokenFile) ?? str(u['token-file'])) ?? null,
    certData: str(u['client-certificate-data']) ?? null,
    certFile: absolute(root, str(u['client-certificate'])) ?? null,
    keyData: str(u['client-key-data']) ?? null,
    keyFile: absolute(root, str(u['client-key'])) ?? null,
    username: str(u.username) ?? null,
    password: str(u.password) ?? null,
    ...(exec ? { exec } : {}),
    ...(isObj(u['auth-provider']) ? { authProvider: u['auth-provider'] as UserEntry['authProvider'] } : {}),
    impersonateUser: str(u.as) ?? null,
  };
}

/** JSON (what `kubectl config view --flatten -o json` and client-node write) natively, else YAML. */
function parseConfig(text: string): unknown {
  if (/^\s*\{/.test(text)) {
    try {
      return JSON.parse(text);
    } catch {
      // A YAML flow mapping: the YAML parser decides.
    }
  }
  return yaml().parse(text, { prettyErrors: false });
}

/** The current context of the merged files. Throws a KubeconfigSyntaxError (no file text in it). */
export function currentContext(files: KubeconfigText[]): CurrentContext {
  let current: string | undefined;
  const clusters = new Map<string, ClusterEntry>();
  const users = new Map<string, UserEntry>();
  const contexts = new Map<string, Obj>();
  for (const f of files) {
    let doc: unknown;
    try {
      doc = parseConfig(f.text);
    } catch (e) {
      throw new KubeconfigSyntaxError((e as Error).message, false);
    }
    if (!isObj(doc)) throw new KubeconfigSyntaxError('not a kubeconfig document', true);
    const root = dirname(f.path);
    current ??= str(doc['current-context']) || undefined;
    for (const [n, e] of named(doc.clusters))
      if (!clusters.has(n) && isObj(e.cluster)) clusters.set(n, cluster(n, e.cluster, root));
    for (const [n, e] of named(doc.users))
      if (!users.has(n)) users.set(n, user(n, isObj(e.user) ? e.user : {}, root));
    for (const [n, e] of named(doc.contexts))
      if (!contexts.has(n) && isObj(e.context)) contexts.set(n, e.context);
  }
  const ctx = current === undefined ? undefined : contexts.get(current);
  return {
    cluster: ctx ? clusters.get(str(ctx.cluster) ?? '') : undefined,
    user: ctx ? users.get(str(ctx.user) ?? '') : undefined,
    namespace: ctx ? str(ctx.namespace) : undefined,
  };
}
