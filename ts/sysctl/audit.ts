// `auditSysctlPolicy`: the pods and workload templates already in a cluster that a policy file
// would refuse, decided by the file's own admit chain (the in-process rules the rendered
// ValidatingAdmissionPolicy mirrors, so the messages are the ones admission would give). Every
// kind is read in pages (`limit` + `continue`), one page in memory at a time.
import type { KubeConfig } from '@kubernetes/client-node';
import { assertInteger, describe, KubenodeError, KubenodeTypeError } from '../errors.js';
import { apiCode, apiErrorBody, describeError } from '../kube/api-error.js';
import { withUserAgent } from '../kube/client.js';
import { clientNode } from '../peers.js';
import type { SysctlPolicyFile } from './policy-file.js';
import { WORKLOAD_KINDS } from './render/admission-policy.js';
import { selectorMatches } from './render/selector.js';
import type { PodLike } from './types.js';

/** The kinds audited: pods, then every kind that holds a pod template. */
export const AUDITED_KINDS = ['Pod', 'PodTemplate', 'ReplicationController', ...WORKLOAD_KINDS] as const;
/** One of `AUDITED_KINDS`. */
export type AuditedKind = (typeof AUDITED_KINDS)[number];

/** kubectl's default `--chunk-size`. */
export const DEFAULT_CHUNK_SIZE = 500;

/** An object the policy would refuse. */
export interface AuditFinding {
  /** Its kind. */
  kind: AuditedKind;
  /** Its namespace. */
  namespace: string;
  /** Its name. */
  name: string;
  /** The refusing handler of the file's admit chain (`sysctl` or `sysctl-policy`). */
  handler: string;
  /** The refusal's message, as admission gives it. */
  message: string;
}

/** Options of `auditSysctlPolicy`. */
export interface AuditOptions {
  /** Objects per LIST request (default 500, kubectl's). */
  chunkSize?: number;
  /** Called for each refused object, as soon as its page is decided. */
  onFinding(finding: AuditFinding): void;
}

/** What an audit looked at. */
export interface AuditSummary {
  /** Objects decided, in namespaces the policy applies to. */
  scanned: number;
  /** Of those, the ones refused. */
  refused: number;
  /** LIST requests made (pages). */
  pages: number;
  /**
   * Times a continue token expired in the middle of a LIST (the API server compacted its
   * history, by default every 5 minutes) and the LIST went on from the token the API server
   * offered in its answer: objects listed after that may be newer than those before.
   */
  inconsistentResumes: number;
}

interface Page {
  items: Array<{ metadata?: { name?: string; namespace?: string; labels?: Record<string, string> } }>;
  metadata?: { _continue?: string };
}
type Lister = (q: { limit: number; _continue?: string }) => Promise<Page>;
type SpecOf = (o: unknown) => PodLike['spec'] | undefined;

interface Template {
  template?: { spec?: PodLike['spec'] };
}
const podSpec: SpecOf = (o) => (o as PodLike).spec;
const templateSpec: SpecOf = (o) => (o as { spec?: Template }).spec?.template?.spec;

/**
 * A `@kubernetes/client-node` `KubeConfig`, declared by the method the audit calls, so the sysctl
 * typings need no optional peer installed; the audit checks it at the call.
 */
export interface KubeConfigLike {
  /** `KubeConfig.makeApiClient`. */
  makeApiClient: unknown;
}

/** The listers and pod specs of every audited kind, on `kc`. */
function sources(kc: KubeConfig): Array<[AuditedKind, Lister, SpecOf]> {
  const { AppsV1Api, BatchV1Api, CoreV1Api } = clientNode();
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const batch = kc.makeApiClient(BatchV1Api);
  return [
    ['Pod', (q) => core.listPodForAllNamespaces(q), podSpec],
    ['PodTemplate', (q) => core.listPodTemplateForAllNamespaces(q), (o) => (o as Template).template?.spec],
    ['ReplicationController', (q) => core.listReplicationControllerForAllNamespaces(q), templateSpec],
    ['Deployment', (q) => apps.listDeploymentForAllNamespaces(q), templateSpec],
    ['StatefulSet', (q) => apps.listStatefulSetForAllNamespaces(q), templateSpec],
    ['DaemonSet', (q) => apps.listDaemonSetForAllNamespaces(q), templateSpec],
    ['ReplicaSet', (q) => apps.listReplicaSetForAllNamespaces(q), templateSpec],
    ['Job', (q) => batch.listJobForAllNamespaces(q), templateSpec],
    [
      'CronJob',
      (q) => batch.listCronJobForAllNamespaces(q),
      (o) => (o as { spec?: { jobTemplate?: { spec?: Template } } }).spec?.jobTemplate?.spec?.template?.spec,
    ],
  ];
}

/**
 * The continue token of a 410 Expired answer to a LIST with an expired continue token: the API
 * server offers one that goes on from the same key at its newest revision.
 */
function freshContinue(e: unknown): string | undefined {
  if (apiCode(e) !== 410) return undefined;
  // client-node 1.x hands a 410's Status over as its JSON text (`continue`); a decoded
  // V1Status would name the field `_continue`.
  const meta = apiErrorBody(e)?.metadata as { continue?: unknown; _continue?: unknown } | undefined;
  const token = meta?.continue ?? meta?._continue;
  return typeof token === 'string' && token !== '' ? token : undefined;
}

/**
 * Every item of a paged LIST, one page held at a time, counted in `summary`. A continue token
 * that expired mid-way is replaced by the one the API server offers: a LIST from the start would
 * report the objects already seen twice, and client-go's fallback, one LIST without a limit,
 * would hold the whole kind in memory.
 */
async function* paged(
  what: string,
  list: Lister,
  limit: number,
  summary: AuditSummary,
): AsyncGenerator<Page['items'][number]> {
  let cont: string | undefined;
  // A fresh token that expires too, before any page, ends the LIST: no loop without progress.
  let justResumed = false;
  do {
    let page: Page;
    try {
      page = await list(cont === undefined ? { limit } : { limit, _continue: cont });
    } catch (e) {
      const fresh = cont === undefined || justResumed ? undefined : freshContinue(e);
      if (fresh !== undefined) {
        summary.inconsistentResumes++;
        justResumed = true;
        cont = fresh;
        continue;
      }
      throw new KubenodeError('ERR_KUBENODE_IO', `cannot list ${what}: ${describeError(e)}`, { cause: e });
    }
    summary.pages++;
    justResumed = false;
    yield* page.items;
    cont = page.metadata?._continue || undefined;
  } while (cont !== undefined);
}

/**
 * Decides every pod and pod template in the cluster by `file`'s admit chain, in namespaces its
 * `namespaceSelector` selects, and reports each refusal through `onFinding`. Findings are not
 * kept: memory stays one page whatever the cluster's size.
 * @throws KubenodeError (`ERR_KUBENODE_IO`) when a LIST fails (the message has the API's reason).
 * @throws KubenodeTypeError (`ERR_KUBENODE_INVALID_ARG`) for a `chunkSize` that is not a positive integer, or a `kubeConfig` that is not a KubeConfig.
 */
export async function auditSysctlPolicy(
  kubeConfig: KubeConfigLike,
  file: SysctlPolicyFile,
  options: AuditOptions,
): Promise<AuditSummary> {
  if (typeof (kubeConfig as { makeApiClient?: unknown } | null)?.makeApiClient !== 'function') {
    throw new KubenodeTypeError(
      `kubeConfig must be a @kubernetes/client-node KubeConfig, got ${describe(kubeConfig)}`,
    );
  }
  const kc = kubeConfig as KubeConfig;
  const limit = assertInteger('chunkSize', options.chunkSize ?? DEFAULT_CHUNK_SIZE, 1);
  const view = withUserAgent(kc, 'kubenode-sysctl-audit');
  const summary: AuditSummary = { scanned: 0, refused: 0, pages: 0, inconsistentResumes: 0 };
  const selector = file.spec.namespaceSelector;
  let selected: Set<string> | null = null;
  if (selector !== undefined) {
    const core = view.makeApiClient(clientNode().CoreV1Api);
    selected = new Set();
    for await (const ns of paged('namespaces', (q) => core.listNamespace(q), limit, summary)) {
      if (selectorMatches(selector, ns.metadata?.labels)) selected.add(ns.metadata?.name ?? '');
    }
  }
  const chain = file.admitChain();
  for (const [kind, list, specOf] of sources(view)) {
    for await (const o of paged(kind, list, limit, summary)) {
      const namespace = o.metadata?.namespace ?? '';
      if (selected !== null && !selected.has(namespace)) continue;
      summary.scanned++;
      const spec = specOf(o);
      if (spec === undefined) continue;
      const r = await chain.admit({ pod: { metadata: o.metadata, spec } as PodLike });
      if (r.admit) continue;
      summary.refused++;
      options.onFinding({
        kind,
        namespace,
        name: o.metadata?.name ?? '',
        handler: r.handler ?? '',
        message: r.message ?? '',
      });
    }
  }
  return summary;
}
