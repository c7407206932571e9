// The kubelet side of a rendered policy: the allowlist a node would build (safe list for the
// kernel and Kubernetes version plus `--allowed-unsafe-sysctls`), built by the native code so
// the rendered CEL and the in-process `SysctlAllowlist` come from one source.
import { KubenodeError } from '../../errors.js';
import { newAllowlist, type SysctlAllowlist } from '../allowlist.js';
import { safeSysctlAllowlist } from '../kernel.js';

/** The kubelet side of a rendered policy: which allowlist a node builds. */
export interface KubeletAllowlistOptions {
  /** Include the kubelet's safe sysctl list (and its hostNetwork/hostIPC rules). */
  includeSafeSysctls?: boolean;
  /** The kubelet's `--allowed-unsafe-sysctls` (names or patterns ending in `*`). */
  allowedUnsafeSysctls?: readonly string[];
  /** Kernel for the safe list (default: the running kernel). */
  kernelVersion?: string;
  /** Kubernetes release for the safe list (default: the newest known). */
  kubernetesVersion?: string;
}

type SafeList = (kernelVersion?: string, options?: { kubernetesVersion?: string }) => string[];

/** The allowlist the options describe, or null when they ask for no kubelet check. */
export function kubeletAllowlist(options: KubeletAllowlistOptions): SysctlAllowlist | null {
  const unsafe = options.allowedUnsafeSysctls ?? [];
  if (!options.includeSafeSysctls && unsafe.length === 0) return null;
  const safe = options.includeSafeSysctls
    ? (safeSysctlAllowlist as SafeList)(
        options.kernelVersion,
        options.kubernetesVersion === undefined
          ? undefined
          : { kubernetesVersion: options.kubernetesVersion },
      )
    : [];
  const release =
    options.kubernetesVersion === undefined ? {} : { kubernetesVersion: options.kubernetesVersion };
  return newAllowlist([...safe, ...unsafe], release);
}

/** A message split around the quoted sysctl name: `prefix + "name" + suffix`. */
export type MessageTemplate = readonly [prefix: string, suffix: string];

/** Splits `message` around `"<sample>"`, the way the handlers quote a (valid) name. */
export function templateOf(message: string | undefined, sample: string): MessageTemplate {
  const at = message?.indexOf(`"${sample}"`) ?? -1;
  if (message === undefined || at < 0) {
    throw new KubenodeError('ERR_KUBENODE_INTERNAL', `no "${sample}" in message ${JSON.stringify(message)}`);
  }
  return [message.slice(0, at + 1), message.slice(at + 1 + sample.length)];
}

function rejection(
  patterns: string[],
  name: string,
  spec: { hostNetwork?: boolean; hostIPC?: boolean; hostUsers?: boolean },
): string | undefined {
  return newAllowlist(patterns).admit({
    pod: { spec: { ...spec, securityContext: { sysctls: [{ name, value: '' }] } } },
  }).message;
}

/** The kubelet's rejection messages, taken from the native handler so the CEL repeats its text. */
export function kubeletMessages(): {
  notAllowlisted: MessageTemplate;
  hostNet: MessageTemplate;
  hostIpc: MessageTemplate;
  hostUser: MessageTemplate;
} {
  return {
    notAllowlisted: templateOf(rejection([], 'kernel.sem', {}), 'kernel.sem'),
    hostNet: templateOf(
      rejection(['net.core.somaxconn'], 'net.core.somaxconn', { hostNetwork: true }),
      'net.core.somaxconn',
    ),
    hostIpc: templateOf(rejection(['kernel.sem'], 'kernel.sem', { hostIPC: true }), 'kernel.sem'),
    hostUser: templateOf(
      rejection(['user.max_user_namespaces'], 'user.max_user_namespaces', { hostUsers: true }),
      'user.max_user_namespaces',
    ),
  };
}
