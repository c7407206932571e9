// The Kubernetes release whose conntrack rules apply. The core parses it and owns the rules
// that differ between releases; this only checks the JS shape.
import { assertString, callNative } from '../errors.js';
import { native } from '../native.js';

/**
 * The release whose conntrack rules kubenode applies, as `v1.<minor>`: `version` (`v1.36`,
 * `1.37`, `v1.36.3`), or the newest kubenode knows (v1.37) when undefined. A malformed release
 * throws a `KubenodeError` of kind `kubernetes-version` with `ERR_KUBENODE_PARSE`, one kubenode
 * has no rules for the same kind with `ERR_KUBENODE_UNSUPPORTED`.
 */
export function conntrackKubernetesVersion(version?: string): string {
  if (version !== undefined) assertString('kubernetesVersion', version);
  return callNative(() => native.conntrackKubernetesVersion(version));
}
