// Type-checked by scripts/check-tarball.sh against the packed tarball with `strict` and
// `skipLibCheck: false`: the consumer's own client-node KubeConfig goes into the daemons.
import { KubeConfig } from '@kubernetes/client-node';
import { conntrack, isKubenodeError, KubenodeError, servicecidr } from 'kubenode';
import { AllocationBitmap, type AllocationBitmap as Bitmap } from 'kubenode/bitmap';
import { isValidSysctlName, type PodLike } from 'kubenode/sysctl';
import { UserNsManager } from 'kubenode/userns';

const kc = new KubeConfig();
kc.loadFromDefault();
export const reconciler: conntrack.StaleFlowReconciler = new conntrack.StaleFlowReconciler(kc, {
  families: ['IPv4'],
});
export const controller = new servicecidr.ServiceCIDRController({ kubeConfig: kc });
export const ids: Bitmap = new AllocationBitmap(8, 'ids');
export const pod: PodLike = {
  spec: { securityContext: { sysctls: [{ name: 'kernel.shm_rmid_forced', value: '1' }] } },
};
export const valid: boolean = isValidSysctlName('net.ipv4.ip_forward');
export async function manager(): Promise<UserNsManager | KubenodeError> {
  try {
    return await UserNsManager.create({ podsDir: '/var/lib/kubelet/pods' });
  } catch (e) {
    if (e instanceof KubenodeError && isKubenodeError(e)) return e;
    throw e;
  }
}
