// Type-checked by scripts/check-tarball.sh before the optional peers are installed, with
// `strict` and `skipLibCheck: false`: the subsystems that do not need them type-check alone.
import { PodAdmitChain } from 'kubenode/admission';
import { AllocationBitmap } from 'kubenode/bitmap';
import { isValidSysctlName, type PodLike } from 'kubenode/sysctl';
import { UserNsManager } from 'kubenode/userns';

export const chain = new PodAdmitChain([]);
export const ids = new AllocationBitmap(8, 'ids');
export const pod: PodLike = {
  spec: { securityContext: { sysctls: [{ name: 'kernel.shm_rmid_forced', value: '1' }] } },
};
export const valid: boolean = isValidSysctlName('net.ipv4.ip_forward');
export const create: typeof UserNsManager.create = UserNsManager.create;
