// The host-namespace flag of validateSysctlNames reaches the binding as its own constant:
// a namespaced sysctl on a host-network pod is invalid unless AllowNamespacedSysctlsForHostNetAndHostIPC.
import { describe, expect, it } from 'vitest';
import { sysctl } from '../../ts/index.js';
import { native } from '../../ts/native.js';
import { podFlagBits } from '../../ts/sysctl/pod.js';

describe('validateSysctlNames host flags', () => {
  it('the binding exports the flag, its own bit apart from the pod flags', () => {
    const { hostNetwork, hostIpc, podUserns } = podFlagBits();
    expect(native.SYSCTL_ALLOW_HOST_NAMESPACED).toBe(8);
    // Its own bit: a pod's host flags never read as the ratchet.
    expect(native.SYSCTL_ALLOW_HOST_NAMESPACED & (hostNetwork | hostIpc | podUserns)).toBe(0);
  });

  it('allowHost lifts the host-network rejection of a net.* sysctl', () => {
    const path = 'spec.securityContext.sysctls';
    const { hostNetwork } = podFlagBits();
    const denied = sysctl.validateSysctlNames(['net.ipv4.ip_forward'], path, hostNetwork, false);
    expect(denied).toHaveLength(1);
    expect(denied[0]).toMatchObject({ type: 'FieldValueInvalid', field: `${path}[0].name` });
    expect(sysctl.validateSysctlNames(['net.ipv4.ip_forward'], path, hostNetwork, true)).toEqual([]);
  });
});
