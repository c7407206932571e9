// The audit's arguments are checked before anything is listed: a value that is not a KubeConfig
// is a typed error (the sysctl typings declare it structurally, so TypeScript alone cannot tell).
import { describe, expect, it } from 'vitest';
import { KubenodeTypeError, sysctl } from '../../ts/index.js';

const file = sysctl.parseSysctlPolicyFile(
  'apiVersion: kubenode.io/v1alpha1\nkind: SysctlPolicy\nmetadata: {name: all}\nspec:\n  allowedSysctls: ["kernel.shm*"]\n',
);

describe('auditSysctlPolicy arguments', () => {
  it.each([null, {}, { makeApiClient: 'no' }, 'kubeconfig'])('refuses %j as the KubeConfig', async (kc) => {
    const call = sysctl.auditSysctlPolicy(kc as never, file, { onFinding: () => {} });
    await expect(call).rejects.toBeInstanceOf(KubenodeTypeError);
    await expect(call).rejects.toThrow(/^kubeConfig must be a @kubernetes\/client-node KubeConfig, got /);
  });
});
