// Which IPAddresses the ServiceCIDR deletion guard weighs. Not part of the public typings: it
// takes any IPAddress shape (client-node's, or the controller's plain JSON objects).
import { IPALLOCATOR_CONTROLLER_NAME, LABEL_IP_FAMILY, LABEL_MANAGED_BY } from './labels.js';

/** The fields of an IPAddress the guard reads. */
export interface IPAddressLike {
  metadata?: { name?: string; labels?: Record<string, string> } | undefined;
}

/**
 * The IPAddresses `canDeleteCIDR` weighs: those the API server's allocator manages, each with
 * its family label (undefined when absent), in list order.
 */
export function allocatorIPs<T extends IPAddressLike>(
  ips: readonly T[],
): { name: string; family: string | undefined; ip: T }[] {
  const managed: { name: string; family: string | undefined; ip: T }[] = [];
  for (const ip of ips) {
    const labels = ip.metadata?.labels ?? {};
    if (labels[LABEL_MANAGED_BY] !== IPALLOCATOR_CONTROLLER_NAME || !ip.metadata?.name) continue;
    managed.push({ name: ip.metadata.name, family: labels[LABEL_IP_FAMILY], ip });
  }
  return managed;
}
