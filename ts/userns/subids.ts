// Where the kubelet's ID pool comes from (pkg/kubelet/kubelet_pods.go getKubeletMappings): the
// default pool [idsPerPod, 2^32), unless a `kubelet` account exists, in which case `getsubids`
// must report one identical range for UIDs and GIDs. Order and texts follow upstream.
import { execFile } from 'node:child_process';
import { access, constants, readFile } from 'node:fs/promises';
import path from 'node:path';
import { callNative } from '../errors.js';
import { native } from '../native.js';
import { UsernsError } from './errors.js';

export const KUBELET_USER = 'kubelet';

/** Go's `%q`, from the core (the binding loads on the first message that needs it). */
const quote = (s: string): string => native.goQuote(s);

/** The host ID range user namespaces are cut from (the kubelet's `kubeletMappingID`/`Len`). */
export interface IdPool {
  /** First host ID of the pool. */
  firstId: number;
  /** Number of IDs in the pool. */
  length: number;
  /** `default` (no kubelet account, or gate off) or `getsubids`. */
  source: 'default' | 'getsubids';
}

/** Default pool: first ID `idsPerPod`, length `2^32 - idsPerPod` (the Rust core's rule). */
export function defaultPool(idsPerPod: number): IdPool {
  const [firstId = 0, length = 0] = callNative(() => native.usernsDefaultPool(idsPerPod));
  return { firstId, length, source: 'default' };
}

/** Go's `strconv.ParseUint(s, 10, 32)`, with its error texts. */
function parseUint32(s: string): number {
  if (!/^[0-9]+$/.test(s)) throw new Error(`strconv.ParseUint: parsing ${quote(s)}: invalid syntax`);
  const v = Number(s);
  if (v > 0xffffffff) throw new Error(`strconv.ParseUint: parsing ${quote(s)}: value out of range`);
  return v;
}

function configError(message: string): UsernsError {
  return new UsernsError('ERR_KUBENODE_INVALID_ARG', 'config', message);
}

/** Upstream's `parseGetSubIdsOutput`: exactly one line of 4 fields; returns `[start, count]`. */
export function parseGetSubIdsOutput(input: string): [number, number] {
  const lines = input.replace(/^\n+|\n+$/g, '').split('\n');
  if (lines.length !== 1) {
    throw configError(`error parsing line ${quote(input)}: it must contain only one line`);
  }
  // strings.Fields: split on Unicode white space.
  const parts = (lines[0] ?? '').split(/[\s\u0085\u00a0]+/u).filter((p) => p !== '');
  if (parts.length !== 4) throw configError(`invalid line ${quote(input)}`);
  const num = (s: string): number => {
    try {
      return parseUint32(s);
    } catch (e) {
      throw configError(`error parsing line ${quote(input)}: ${(e as Error).message}`);
    }
  };
  return [num(parts[2] ?? ''), num(parts[3] ?? '')];
}

/** Options of `resolveKubeletMappings`. */
export interface ResolveOptions {
  /** IDs per pod; the default pool starts at this ID. */
  idsPerPod: number;
  /** `UserNamespacesSupport` (default true); when off the default pool is used without lookup. */
  featureGateEnabled?: boolean;
  /** PATH to search (default: process.env.PATH). */
  pathEnv?: string;
  /** Account name (default `kubelet`); tests use another. */
  user?: string;
}

function run(file: string, args: string[]): Promise<{ stdout: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { encoding: 'utf8' }, (err, stdout) => {
      if (err && typeof (err as { code?: unknown }).code !== 'number') {
        reject(err);
        return;
      }
      resolve({ stdout, code: err ? ((err as { code?: number }).code ?? 1) : 0 });
    });
  });
}

/** Go's `exec.LookPath`: the first executable regular file named `name` on PATH. */
export async function lookPath(name: string, pathEnv = process.env.PATH ?? ''): Promise<string | null> {
  for (const dir of pathEnv.split(path.delimiter)) {
    const p = path.join(dir === '' ? '.' : dir, name);
    try {
      await access(p, constants.X_OK);
      return p;
    } catch {}
  }
  return null;
}

function ioError(message: string, cause?: unknown): UsernsError {
  return new UsernsError('ERR_KUBENODE_IO', 'io', message, cause === undefined ? undefined : { cause });
}

/** Runs `file`, turning a failure to start it (not an exit status) into `message: <reason>`. */
async function runOr(file: string, args: string[], message: string) {
  try {
    return await run(file, args);
  } catch (e) {
    throw ioError(`${message}: ${(e as Error).message}`, e);
  }
}

/** Whether the account exists: `getent passwd` (NSS) when available, else /etc/passwd. A lookup
 * that fails (rather than finding no account) is a `UsernsError` of kind `io`, as Go's
 * `user.Lookup` errors other than `UnknownUserError`. */
export async function accountExists(user: string, pathEnv?: string): Promise<boolean> {
  const getent = await lookPath('getent', pathEnv);
  if (getent) {
    const lookup = `user: lookup username ${user}`;
    const r = await runOr(getent, ['passwd', user], lookup);
    if (r.code === 0) return true;
    if (r.code === 2) return false;
    throw ioError(`${lookup}: getent exited with status ${r.code}`);
  }
  const passwd = await readFile('/etc/passwd', 'utf8').catch(() => '');
  return passwd.split('\n').some((l) => l.split(':')[0] === user);
}

/** The kubelet's `getKubeletMappings`. Errors are `UsernsError`s carrying upstream's text
 * (without the `kubelet mappings: ` prefix, which the manager adds). */
export async function resolveKubeletMappings(opts: ResolveOptions): Promise<IdPool> {
  const { idsPerPod, featureGateEnabled = true, pathEnv, user = KUBELET_USER } = opts;
  if (!featureGateEnabled) return defaultPool(idsPerPod);
  if (!(await accountExists(user, pathEnv))) return defaultPool(idsPerPod);
  const cmd = await lookPath('getsubids', pathEnv);
  if (cmd === null) {
    // Upstream's fallback tests os.IsNotExist, which exec.ErrNotFound does not match: with a
    // kubelet account, a missing getsubids is fatal.
    throw configError('exec: "getsubids": executable file not found in $PATH');
  }
  const uids = await runOr(cmd, [user], `error retrieving additional uids for user ${quote(user)}`);
  if (uids.code !== 0) {
    throw configError(`error retrieving additional uids for user ${quote(user)}: exit status ${uids.code}`);
  }
  const gids = await runOr(cmd, ['-g', user], `error retrieving additional gids for user ${quote(user)}`);
  if (gids.code !== 0) throw configError(`error retrieving additional gids for user ${quote(user)}`);
  if (uids.stdout !== gids.stdout)
    throw configError(`mismatched subuids and subgids for user ${quote(user)}`);
  const [firstId, length] = parseGetSubIdsOutput(uids.stdout);
  return { firstId, length, source: 'getsubids' };
}
