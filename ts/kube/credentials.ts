// Credentials in requests, never in messages. A bearer token is trimmed as client-go trims a
// token file (`kubectl create token sa > token` ends it with a newline, which no HTTP header may
// carry), and a failure to produce credentials (an exec plugin, a token file, a token no header
// can carry) becomes a KubeCredentialError whose message names the user and the cause but holds
// no secret. Every message that reaches a log goes through `redactCredentials` as a last guard.
import type { KubeConfig, User } from '@kubernetes/client-node';
import { KubenodeError } from '../errors.js';
import { redactCredentials, rememberCredential } from './redact.js';

/**
 * The credentials for a request could not be produced. Daemons treat it like an unreachable API
 * server (log, back off, retry): a rotated token file or a plugin's login may fix it.
 */
export class KubeCredentialError extends KubenodeError {
  constructor(message: string) {
    // No `cause`: the original error may quote the credential.
    super('ERR_KUBENODE_PERMISSION', message);
    this.name = 'KubeCredentialError';
  }
}

/** Characters node-fetch (and Go's net/http) refuse in a header value. */
const NOT_IN_HEADER = /[^\t\x20-\x7e\x80-\xff]/;

/** A user's credential source, for messages: never the credential itself. */
function describeUser(user: User | null): string {
  if (!user) return 'the current user';
  return `user ${JSON.stringify(user.name)}`;
}

function lastLine(text: string, max = 200): string {
  const line = redactCredentials(text.trim().split('\n').at(-1) ?? '').trim();
  return line.length > max ? `${line.slice(0, max)}…` : line;
}

/** A credential failure of `user` as a KubeCredentialError, with no secret in its message. */
export function credentialFailure(user: User | null, e: unknown): KubeCredentialError {
  if (e instanceof KubeCredentialError) return e;
  const exec = user?.exec as { command?: unknown } | undefined;
  let why: string;
  if (exec && typeof exec.command === 'string') {
    const cmd = JSON.stringify(exec.command);
    const code = (e as { code?: unknown })?.code;
    if (typeof code === 'string') why = `exec credential plugin ${cmd} could not run (${code})`;
    else if (e instanceof SyntaxError) why = `exec credential plugin ${cmd} printed no ExecCredential JSON`;
    else {
      // client-node rejects with the plugin's stderr; client-go passes it to stderr as well.
      const said = lastLine((e as Error)?.message ?? '');
      why = `exec credential plugin ${cmd} failed${said ? `: ${said}` : ''}`;
    }
  } else {
    why = redactCredentials(e instanceof Error ? e.message : String(e));
  }
  return new KubeCredentialError(`cannot get credentials for ${describeUser(user)}: ${why}`);
}

/**
 * The bearer token of an `Authorization` value trimmed; throws a KubeCredentialError if it still
 * holds a character no header can carry.
 */
export function cleanAuthorization(value: string, user: User | null): string {
  const m = /^Bearer\s+([\s\S]*)$/.exec(value);
  if (!m) return value;
  const token = (m[1] ?? '').trim();
  if (token === '' || NOT_IN_HEADER.test(token)) {
    throw new KubeCredentialError(
      `the bearer token of ${describeUser(user)} is ${token === '' ? 'empty' : 'not a valid HTTP header value (it contains a control character or a line break)'}`,
    );
  }
  rememberCredential(token);
  return `Bearer ${token}`;
}

type Headers = Record<string, unknown>;
type ApplyHeader = (this: KubeConfig, opts: { headers?: Headers }) => Promise<void>;

/**
 * An `applyAuthorizationHeader` for a view of `kc`: client-node's own, with its failures turned
 * into KubeCredentialErrors and the bearer token trimmed and checked. Both the generated API
 * clients and the watches authenticate through it.
 */
export function guardedAuthorization(kc: KubeConfig): ApplyHeader {
  const original = (kc as unknown as { applyAuthorizationHeader: ApplyHeader }).applyAuthorizationHeader;
  return async function (this: KubeConfig, opts) {
    const user = this.getCurrentUser();
    try {
      await original.call(this, opts);
    } catch (e) {
      throw credentialFailure(user, e);
    }
    const auth = opts.headers?.Authorization;
    if (typeof auth === 'string' && opts.headers) opts.headers.Authorization = cleanAuthorization(auth, user);
  };
}

/**
 * Checks the current user's static token at start-up (a kubeconfig `token` cannot change while
 * the daemon runs, so a bad one is a configuration error); the KubeCredentialError if it is bad.
 */
export function badStaticToken(kc: KubeConfig): KubeCredentialError | undefined {
  const user = kc.getCurrentUser();
  if (!user?.token) return undefined;
  try {
    cleanAuthorization(`Bearer ${user.token}`, user);
    return undefined;
  } catch (e) {
    return e as KubeCredentialError;
  }
}
