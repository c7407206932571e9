// One informer kept alive on its own: client-node's informer stops on any watch or list error
// other than 410 Gone, so this restarts it after a capped exponential backoff, like client-go's
// reflector. Each informer is restarted alone (calling `start()` on a running informer aborts
// its watch, which would come back as one more error), and only after it failed.
import type { Informer, KubernetesObject, ListPromise, ObjectCache } from '@kubernetes/client-node';

/** Pauses between restarts of a failed watch: doubling from `initialMs` up to `maxMs`. */
export interface WatchBackoff {
  /** First pause after a failure (default 800 ms, client-go's reflector). */
  initialMs?: number;
  /** Longest pause (default 30 s). */
  maxMs?: number;
}

type Inf<T extends KubernetesObject> = Informer<T> & ObjectCache<T>;

const isAbort = (err: unknown): boolean =>
  typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'AbortError';

/** Wraps a list function so that a successful list counts as a sign of health. */
export function observeList<T extends KubernetesObject>(
  list: ListPromise<T>,
  onSuccess: () => void,
): ListPromise<T> {
  return async () => {
    const r = await list();
    onSuccess();
    return r;
  };
}

export class WatchSupervisor<T extends KubernetesObject> {
  readonly #inf: Inf<T>;
  readonly #initialMs: number;
  readonly #maxMs: number;
  readonly #report: (err: unknown) => void;
  #backoffMs = 0;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  /** True while our own `start()` call runs (an abort then is ours, not a failure). */
  #starting = false;
  /** Restart attempts made after failures. */
  restarts = 0;

  constructor(informer: Inf<T>, report: (err: unknown) => void, backoff: WatchBackoff = {}) {
    this.#inf = informer;
    this.#report = report;
    this.#initialMs = Math.max(1, backoff.initialMs ?? 800);
    this.#maxMs = Math.max(this.#initialMs, backoff.maxMs ?? 30_000);
    informer.on('error', (err) => this.#failed(err));
    // A watch event proves the watch works again.
    const healthy = () => this.healthy();
    informer.on('add', healthy);
    informer.on('update', healthy);
    informer.on('delete', healthy);
  }

  /** Resets the backoff: called after a successful list or a watch event. */
  healthy(): void {
    this.#backoffMs = 0;
  }

  #failed(err: unknown): void {
    if (this.#stopped) return;
    if (this.#starting && isAbort(err)) return;
    this.#report(err);
    // Several errors from one failure (list and watch) still give one restart.
    if (this.#timer) return;
    this.#backoffMs = this.#backoffMs === 0 ? this.#initialMs : Math.min(this.#maxMs, this.#backoffMs * 2);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.restarts++;
      void this.#start();
    }, this.#backoffMs);
    // Not unref'd: while the API server is unreachable this timer is all that is left of a
    // started reconciler, and the process must not quietly run out of work; stop() clears it.
  }

  async #start(): Promise<void> {
    if (this.#stopped) return;
    this.#starting = true;
    try {
      await this.#inf.start();
    } catch (e) {
      // Failures of list and watch come as 'error' events; a rejection is a setup failure.
      this.#starting = false;
      this.#failed(e);
    } finally {
      this.#starting = false;
    }
    // A stop() during the list or while the watch connected found no request to abort, and
    // client-node opens the watch anyway: abort it now, or it keeps the process alive.
    if (this.#stopped) await this.#inf.stop();
  }

  /** First start: lists, then watches. A failure is reported and retried like any other. */
  async start(): Promise<void> {
    this.#stopped = false;
    await this.#start();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#inf.stop();
  }
}
