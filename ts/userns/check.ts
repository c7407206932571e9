// Pre-flight check of an ID pool or idsPerPod against the pods already on disk: which pods a
// manager (or kubelet) started with that configuration would refuse, each with the reason. The
// rule lives in Rust (kubenode-userns preflight); this resolves the pool as the manager does.
import type { UsernsMisfit as Misfit, UsernsPoolCheck } from '../binding.js';
import { assertString, awaitNative, KubenodeTypeError, outcomeValue } from '../errors.js';
import { native } from '../native.js';
import { type PoolOptions, poolNumbers, resolvePool } from './pool-options.js';
import type { IdPool } from './subids.js';

// A pod that does not fit: the binding's shape, documented where the binding declares it.
export type { Misfit };

/** Options of `checkPool`: the pods directory and the configuration to check. */
export interface CheckPoolOptions extends PoolOptions {
  /** The kubelet pods directory (`<root>/pods`). */
  podsDir: string;
}

/** What `checkPool` found, with the configuration it checked. */
export interface PoolCheck extends UsernsPoolCheck {
  /** The pool checked (given, or resolved like the kubelet). */
  pool: IdPool;
  /** IDs per pod checked. */
  idsPerPod: number;
  /** `maxPods` checked. */
  maxPods: number;
}

/**
 * Reads every `<podsDir>/<uid>/userns` (no lock, nothing changed) and reports each pod whose
 * range a manager with this pool and `idsPerPod` would refuse at start. Rejects with a
 * `UsernsError` (kind `config`) when the configuration itself is invalid, as creation would.
 */
export async function checkPool(options: CheckPoolOptions): Promise<PoolCheck> {
  if (options === null || typeof options !== 'object') {
    throw new KubenodeTypeError('options must be an object');
  }
  const podsDir = assertString('podsDir', options.podsDir);
  if (podsDir === '') throw new KubenodeTypeError('podsDir must not be empty');
  const { idsPerPod, maxPods } = poolNumbers(options);
  const pool = await resolvePool(options, idsPerPod, true);
  const r = outcomeValue(
    await awaitNative(
      native.usernsCheckPool({ podsDir, idsPerPod, firstId: pool.firstId, length: pool.length, maxPods }),
    ),
  );
  return { ...r, pool, idsPerPod, maxPods };
}
