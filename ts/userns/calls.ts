// Per-pod getOrCreate/release calls, coalesced: the calls made in one turn of the event loop
// cross to native code as one `submit`, and calls that arrive while earlier ones run are queued
// natively and run as the next batch on the manager's own thread (kubenode-userns CallQueue).
// Outcomes come back in submission order through one `deliver` callback, so each promise settles
// with its own outcome after its own call has run (file written and synced).
import type { UsernsCore, UsernsOutcome } from '../binding.js';
import { callNative } from '../errors.js';
import { native } from '../native.js';

interface Waiter {
  resolve(o: UsernsOutcome): void;
  reject(e: unknown): void;
}

/** Waiters of submitted calls, oldest first. Kept apart from the core: the `deliver` callback
 * (held by native code) must not reach the core, or the core could never be collected. */
class Submitted {
  #waiters: Waiter[] = [];
  #head = 0;

  push(ws: Waiter[]): void {
    for (const w of ws) this.#waiters.push(w);
  }

  deliver(outcomes: UsernsOutcome[]): void {
    for (const o of outcomes) {
      const w = this.#waiters[this.#head];
      if (!w) break;
      this.#waiters[this.#head++] = undefined as unknown as Waiter;
      w.resolve(o);
    }
    if (this.#head === this.#waiters.length) {
      this.#waiters = [];
      this.#head = 0;
    }
  }
}

interface Call extends Waiter {
  podUid: string;
  release: boolean;
  /** Call order, kept across pods within a batch. */
  seq: number;
  /** Not ready while a check that must pass first (the runtime handler's) is running. */
  ready: boolean;
  /** The check failed: the call is rejected with this instead of running. */
  failed?: unknown;
}

/** The per-pod calls of one manager. Each pod's calls run in the order they were made; a pod
 * whose call waits for its own handler check holds up only its own later calls. */
export class PodCalls {
  readonly core: UsernsCore;
  #submitted = new Submitted();
  /** Calls not yet submitted, per pod, oldest first. */
  #pending = new Map<string, Call[]>();
  /** Pods whose oldest pending call may have become ready since the last flush. */
  #dirty = new Set<string>();
  #seq = 0;
  #scheduled = false;

  constructor() {
    const submitted = this.#submitted;
    this.core = new native.UsernsCore((outcomes) => submitted.deliver(outcomes));
  }

  /** One call, placed in its pod's order now; runs once `gate` (if any) resolves, after every
   * call made before it for the same pod, and settles with its own outcome once it has run. A
   * rejected gate rejects the call with the same reason, without running it. */
  run(podUid: string, release: boolean, gate: Promise<void> | null = null): Promise<UsernsOutcome> {
    return new Promise((resolve, reject) => {
      const call: Call = { podUid, release, seq: this.#seq++, ready: gate === null, resolve, reject };
      const q = this.#pending.get(podUid);
      if (q) q.push(call);
      else this.#pending.set(podUid, [call]);
      if (gate) {
        gate.then(
          () => this.#ready(call),
          (e: unknown) => {
            call.failed = e;
            this.#ready(call);
          },
        );
      } else {
        this.#ready(call);
      }
    });
  }

  #ready(call: Call): void {
    call.ready = true;
    this.#dirty.add(call.podUid);
    // Calls made in the same turn cross together.
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => this.#flush());
  }

  /** Submits, in call order, every pod's ready calls up to its first that is not ready. */
  #flush(): void {
    this.#scheduled = false;
    const taken: Call[] = [];
    for (const uid of this.#dirty) {
      const q = this.#pending.get(uid);
      if (!q) continue;
      let n = 0;
      while (n < q.length && (q[n] as Call).ready) n++;
      if (n === q.length) this.#pending.delete(uid);
      for (const c of q.splice(0, n)) taken.push(c);
    }
    this.#dirty.clear();
    if (taken.length === 0) return;
    taken.sort((a, b) => a.seq - b.seq);
    const go: Call[] = [];
    for (const c of taken) {
      if (c.failed === undefined) go.push(c);
      else c.reject(c.failed);
    }
    if (go.length === 0) return;
    try {
      callNative(() =>
        this.core.submit(go.map((c) => ({ type: c.release ? 'release' : 'getOrCreate', podUid: c.podUid }))),
      );
    } catch (e) {
      for (const c of go) c.reject(e);
      return;
    }
    // Outcomes reach `deliver` on a later turn, never during `submit`.
    this.#submitted.push(go);
  }
}
