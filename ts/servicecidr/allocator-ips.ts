// Which IPAddresses the ServiceCIDR deletion guard weighs. Not part of the public typings: its
// IPAddress type is missing from the oldest @kubernetes/client-node the package supports.
import type { V1IPAddress } from '@kubernetes/client-node';
import { IPALLOCATOR_CONTROLLER_NAME, LABEL_IP_FAMILY, LABEL_MANAGED_BY } from './labels.js';

/**
 * The IPAddresses `canDeleteCIDR` weighs: those the API server's allocator manages, each with
 * its family label (undefined when absent), in list order.
 */
export function allocatorIPs(
  ips: readonly V1IPAddress[],
): { name: string; family: string | undefined; ip: V1IPAddress }[] {
  const managed: { name: string; family: string | undefined; ip: V1IPAddress }[] = [];
  for (const ip of ips) {
    const labels = ip.metadata?.labels ?? {};
    if (labels[LABEL_MANAGED_BY] !== IPALLOCATOR_CONTROLLER_NAME || !ip.metadata?.name) continue;
    managed.push({ name: ip.metadata.name, family: labels[LABEL_IP_FAMILY], ip });
  }
  return managed;
}
