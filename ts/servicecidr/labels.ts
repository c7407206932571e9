// Upstream's IPAddress labels (pkg/apis/networking): read by the informer handlers and by the
// controller's sync, defined here once.

/** IPAddress label holding its family (`IPv4`/`IPv6`). */
export const LABEL_IP_FAMILY = 'ipaddress.kubernetes.io/ip-family';
/** IPAddress label naming the allocator that manages it. */
export const LABEL_MANAGED_BY = 'ipaddress.kubernetes.io/managed-by';
/** `LABEL_MANAGED_BY` value of IPAddresses the API server's allocator created. */
export const IPALLOCATOR_CONTROLLER_NAME = 'ipallocator.k8s.io';
