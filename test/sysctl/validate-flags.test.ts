// The host-namespace flag of validateSysctlNames reaches the binding as its own constant:
// a namespaced sysctl on a host-network pod is invalid unless AllowNamespacedSysctlsForHostNetAndHostIPC.
import { describe, expect, it } from 'vitest';
import { sysctl } from '../../ts/index.js';
import { native } from '../../ts/native.js';
import { HOST_IPC, HOST_NETWORK, POD_USERNS } from '../../ts/sysctl/pod.js';

describe('validateSysctlNames host flags', () => {
  it('the binding exports the flag and staging constants', () => {
    expect(native.SYSCTL_ALLOW_HOST_NAMESPACED).toBe(8);
    // Its own bit: a pod's host flags never read as the ratchet.
    expect(native.SYSCTL_ALLOW_HOST_NAMESPACED & (HOST_NETWORK | HOST_IPC | POD_USERNS)).toBe(0);
    expect(native.SYSCTL_STAGE_HEADER).toBe(3);
  });

  it('allowHost lifts the host-network rejection of a net.* sysctl', () => {
    const path = 'spec.securityContext.sysctls';
    const denied = sysctl.validateSysctlNames(['net.ipv4.ip_forward'], path, HOST_NETWORK, false);
    expect(denied).toHaveLength(1);
    expect(denied[0]).toMatchObject({ type: 'FieldValueInvalid', field: `${path}[0].name` });
    expect(sysctl.validateSysctlNames(['net.ipv4.ip_forward'], path, HOST_NETWORK, true)).toEqual([]);
  });
});
