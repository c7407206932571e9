// The kubelet's user-namespace configuration as the manager and the pre-flight check take it:
// `idsPerPod` and `maxPods` validated like the kubelet's configuration, and the ID pool given or
// resolved like the kubelet does (getsubids / default pool).
import { assertInteger, callNative, KubenodeError, KubenodeTypeError } from '../errors.js';
import { native } from '../native.js';
import { UsernsError } from './errors.js';
import { type IdPool, resolveKubeletMappings } from './subids.js';

/** Default `userNamespaces.idsPerPod`: IDs mapped per pod (upstream's `userNsLength`). */
export const DEFAULT_IDS_PER_POD = 65536;
/** Default kubelet `maxPods`. */
export const DEFAULT_MAX_PODS = 110;

/** The pool options shared by `UserNsManager.create` and `checkPool`. */
export interface PoolOptions {
  /** `userNamespaces.idsPerPod` (default 65536). */
  idsPerPod?: number;
  /** Kubelet `maxPods` (default 110). */
  maxPods?: number;
  /** The ID pool; resolved like the kubelet (getsubids / default pool) when omitted. */
  mappings?: {
    /** First host ID of the pool; a multiple of `idsPerPod`, at least `idsPerPod`. */
    firstId: number;
    /** Number of IDs in the pool; a multiple of `idsPerPod`, enough for `maxPods`. */
    length: number;
  };
}

/** `idsPerPod` and `maxPods` checked (kubelet configuration validation comes first). */
export function poolNumbers(options: PoolOptions): { idsPerPod: number; maxPods: number } {
  const idsPerPod =
    options.idsPerPod === undefined
      ? DEFAULT_IDS_PER_POD
      : callNative(() =>
          native.usernsValidateIdsPerPod(assertInteger('idsPerPod', options.idsPerPod, -(2 ** 53))),
        );
  const maxPods = assertInteger('maxPods', options.maxPods ?? DEFAULT_MAX_PODS, 0, 0xffffffff);
  return { idsPerPod, maxPods };
}

/** The pool given in `mappings`, else the kubelet's (`getKubeletMappings`). */
export async function resolvePool(options: PoolOptions, idsPerPod: number, gate: boolean): Promise<IdPool> {
  if (options.mappings !== undefined) {
    const m = options.mappings;
    if (m === null || typeof m !== 'object')
      throw new KubenodeTypeError('mappings must be { firstId, length }');
    return {
      firstId: assertInteger('mappings.firstId', m.firstId, 0, 0xffffffff),
      length: assertInteger('mappings.length', m.length, 0, 0xffffffff),
      source: 'default',
    };
  }
  try {
    return await resolveKubeletMappings({ idsPerPod, featureGateEnabled: gate });
  } catch (e) {
    const msg = `kubelet mappings: ${(e as Error).message}`;
    throw e instanceof UsernsError
      ? new UsernsError(e.code, e.kind, msg, { cause: e })
      : e instanceof KubenodeError
        ? new UsernsError(e.code, 'config', msg, { cause: e })
        : new UsernsError('ERR_KUBENODE_IO', 'io', msg, { cause: e });
  }
}
