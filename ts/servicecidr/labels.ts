// Upstream's IPAddress labels (pkg/apis/networking): read by the informer handlers and by the
// controller's sync, defined here once.
export const LABEL_IP_FAMILY = 'ipaddress.kubernetes.io/ip-family';
export const LABEL_MANAGED_BY = 'ipaddress.kubernetes.io/managed-by';
export const IPALLOCATOR_CONTROLLER_NAME = 'ipallocator.k8s.io';
