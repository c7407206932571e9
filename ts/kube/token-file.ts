// A service-account token read from its file and re-read as the kubelet rotates it, as
// client-go's cached file token source does: the contents trimmed, re-read once a minute, and
// a failed re-read (the file briefly missing during an update) keeps the last token read
// rather than failing the request. Replaces client-node's tokenFile provider, which uses the
// file untrimmed and throws from a synchronous read when the file is gone.
import type { User } from '@kubernetes/client-node';
import { readRegularFile } from './regular-file.js';

/** The authProvider name this authenticator answers for. */
export const TOKEN_FILE_PROVIDER = 'kubenode-token-file';
/** How long a token read is used before the file is read again (client-go: one minute). */
export const TOKEN_FILE_PERIOD_MS = 60_000;

/** Reads a token file: trimmed, not empty, bounded like every configuration file. */
export async function readTokenFile(path: string): Promise<string> {
  const token = (await readRegularFile(path)).toString('utf8').trim();
  if (token === '') throw new Error('file is empty');
  return token;
}

/** A client-node authenticator for users `{ authProvider: { name: TOKEN_FILE_PROVIDER, config: { path } } }`. */
export class TokenFileAuth {
  #token: string | undefined;
  #readAt = 0;
  #failing = false;
  readonly #onStale: (err: Error, path: string) => void;

  /** `onStale` hears of a re-read that failed while the last token is still used (once per outage). */
  constructor(onStale: (err: Error, path: string) => void = () => {}) {
    this.#onStale = onStale;
  }

  /** client-node's authenticator hook: true for the user entry this reader stands for. */
  isAuthProvider(user: User): boolean {
    return user.authProvider?.name === TOKEN_FILE_PROVIDER;
  }

  /** Sets the `Authorization` header from the token file (re-read when it is due). */
  async applyAuthentication(user: User, opts: { headers?: Record<string, unknown> }): Promise<void> {
    const path = String(user.authProvider?.config?.path ?? '');
    if (this.#token === undefined || performance.now() - this.#readAt >= TOKEN_FILE_PERIOD_MS) {
      try {
        this.#token = await readTokenFile(path);
        this.#readAt = performance.now();
        this.#failing = false;
      } catch (e) {
        const err = new Error(`cannot read the token file ${path}: ${(e as Error).message}`);
        if (this.#token === undefined) throw err;
        if (!this.#failing) this.#onStale(err, path);
        this.#failing = true;
      }
    }
    opts.headers ??= {};
    opts.headers.Authorization = `Bearer ${this.#token}`;
  }
}
