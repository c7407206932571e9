// Why a ServiceCIDR is stuck in deletion: every IPAddress inside it that the controller weighs,
// the Service owning each, and the other ServiceCIDRs that would take it over. Upstream's
// controller logs only the first blocker; the verdict here is the same `canDeleteCIDR` call.
import type { KubeConfig, V1IPAddress, V1ServiceCIDR } from '@kubernetes/client-node';
import { assertString, KubenodeTypeError } from '../errors.js';
import { apiCode } from '../kube/api-error.js';
import { clientNode } from '../peers.js';
import { allocatorIPs } from './allocator-ips.js';
import { CIDRIndex, type DeleteCheckOutcome } from './cidr.js';
import { CONDITION_READY } from './controller.js';

/** An IPAddress inside the ServiceCIDR. */
export interface ServiceCIDRHolder {
  /** The IPAddress object's name (its address). */
  ipAddress: string;
  /** The Service in its `spec.parentRef`; null when the parent is not a Service. */
  service: {
    /** The Service's namespace. */
    namespace: string;
    /** The Service's name. */
    name: string;
  } | null;
  /** Other ServiceCIDRs containing the address, sorted; empty when none would take it over. */
  takenOverBy: string[];
  /** True when it keeps the ServiceCIDR from going (nothing takes it over). */
  blocking: boolean;
}

/** What `explainServiceCIDR` found. */
export interface ServiceCIDRExplanation {
  /** The ServiceCIDR's name. */
  serviceCIDR: string;
  /** Its `spec.cidrs`. */
  cidrs: string[];
  /** When its deletion was asked for; null when it is not being deleted. */
  deletionTimestamp: string | null;
  /** Its finalizers. */
  finalizers: string[];
  /** Its Ready condition; null when it has none. */
  ready: {
    /** `True`, `False` or `Unknown`. */
    status: string;
    /** The condition's reason (`Terminating` while deletion is blocked). */
    reason: string;
    /** The condition's message. */
    message: string;
  } | null;
  /**
   * The controller's verdict (`canDeleteCIDR`): `blocked` keeps the finalizer; the others let
   * the ServiceCIDR go once the grace period has passed.
   */
  verdict: DeleteCheckOutcome;
  /** Every IPAddress inside it the controller weighs, in list order. */
  holders: ServiceCIDRHolder[];
  /** IPAddress names that are not addresses (the controller skips them). */
  unparsable: string[];
}

function cidrsOf(sc: V1ServiceCIDR): string[] {
  const c = sc.spec?.cidrs;
  return Array.isArray(c) ? c.filter((x): x is string => typeof x === 'string') : [];
}

function serviceOf(ip: V1IPAddress): ServiceCIDRHolder['service'] {
  const p = ip.spec?.parentRef;
  if (!p || (p.group ?? '') !== '' || p.resource !== 'services' || !p.name) return null;
  return { namespace: p.namespace ?? '', name: p.name };
}

/**
 * Explains ServiceCIDR `name` from one list of ServiceCIDRs and one of IPAddresses: the same
 * inputs and the same check as the ServiceCIDRs controller. Resolves to null when it does not
 * exist. API errors other than NotFound reject as they came.
 */
export async function explainServiceCIDR(
  kubeConfig: KubeConfig,
  name: string,
): Promise<ServiceCIDRExplanation | null> {
  if (typeof kubeConfig?.makeApiClient !== 'function') {
    throw new KubenodeTypeError('kubeConfig must be a KubeConfig');
  }
  assertString('name', name);
  const api = kubeConfig.makeApiClient(clientNode().NetworkingV1Api);
  let sc: V1ServiceCIDR;
  try {
    sc = await api.readServiceCIDR({ name });
  } catch (e) {
    if (apiCode(e) === 404) return null;
    throw e;
  }
  const [all, ips] = await Promise.all([api.listServiceCIDR(), api.listIPAddress()]);
  const index = new CIDRIndex();
  index.upsertMany(
    all.items
      .filter((o) => o.metadata?.name)
      .map((o) => ({ name: o.metadata?.name ?? '', cidrs: cidrsOf(o) })),
  );
  // The ServiceCIDR as read, even if the list came a moment later without it.
  index.upsert(name, cidrsOf(sc));
  const managed = allocatorIPs(ips.items);
  const cidrs = cidrsOf(sc);
  const verdict = index.canDelete(name, cidrs, managed).outcome;
  const found = index.holders(name, cidrs, managed);
  const cond = (sc.status?.conditions ?? []).find((c) => c?.type === CONDITION_READY);
  const deletion = sc.metadata?.deletionTimestamp;
  return {
    serviceCIDR: name,
    cidrs,
    deletionTimestamp: deletion ? new Date(deletion).toISOString() : null,
    finalizers: [...(sc.metadata?.finalizers ?? [])],
    ready: cond ? { status: cond.status, reason: cond.reason ?? '', message: cond.message ?? '' } : null,
    verdict,
    holders: found.holders.map((h) => {
      const ip = managed[h.index]?.ip;
      return {
        ipAddress: h.ip,
        service: ip ? serviceOf(ip) : null,
        takenOverBy: h.takenOverBy,
        blocking: verdict === 'blocked' && h.takenOverBy.length === 0,
      };
    }),
    unparsable: found.unparsable,
  };
}
