// Reads deploy/ the way `kubectl apply -k` would for this kustomization: its resources in
// order, the namespace set on every namespaced object, the image tag replaced.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { KubernetesObject, V1DaemonSet, V1Deployment, V1PolicyRule } from '@kubernetes/client-node';
import YAML from 'yaml';
import { LISTENER_FLAGS } from './daemon.js';

export const deployDir = join(import.meta.dirname, '..', '..', 'deploy');

interface Kustomization {
  namespace: string;
  resources: string[];
  images?: { name: string; newTag?: string }[];
}

const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding']);

export function kustomization(): Kustomization {
  return YAML.parse(readFileSync(join(deployDir, 'kustomization.yaml'), 'utf8')) as Kustomization;
}

/** Every object of the kustomization, in order, with its transforms applied. */
export function loadManifests(): KubernetesObject[] {
  const k = kustomization();
  const out: KubernetesObject[] = [];
  for (const file of k.resources) {
    for (const doc of YAML.parseAllDocuments(readFileSync(join(deployDir, file), 'utf8'))) {
      const obj = doc.toJS() as KubernetesObject | null;
      if (!obj) continue;
      if (!CLUSTER_SCOPED.has(obj.kind ?? '')) obj.metadata = { ...obj.metadata, namespace: k.namespace };
      let text = JSON.stringify(obj);
      for (const img of k.images ?? []) {
        text = text.replaceAll(`"image":"${img.name}"`, `"image":"${img.name}:${img.newTag}"`);
      }
      out.push(JSON.parse(text) as KubernetesObject);
    }
  }
  return out;
}

export type RoleObject = KubernetesObject & { rules: V1PolicyRule[] };

/** The object of `kind` named `name` (throws if deploy/ lacks it). */
export function manifest<T extends KubernetesObject = KubernetesObject>(kind: string, name: string): T {
  const o = loadManifests().find((m) => m.kind === kind && m.metadata?.name === name);
  if (!o) throw new Error(`deploy/ has no ${kind} ${name}`);
  return o as T;
}

/**
 * Each (rule, verb, resource) of a role as its own grant, so a test can take exactly one away.
 * `label` reads like `patch servicecidrs/status`.
 */
export interface Grant {
  label: string;
  role: 'cluster' | 'namespace';
  rule: V1PolicyRule;
}

export function grants(cluster: RoleObject, namespaced?: RoleObject): Grant[] {
  const split = (role: Grant['role'], rules: V1PolicyRule[]) =>
    rules.flatMap((r) =>
      r.verbs.flatMap((verb) =>
        (r.resources ?? []).map((res) => ({
          label: `${verb} ${res}`,
          role,
          rule: { ...r, verbs: [verb], resources: [res] },
        })),
      ),
    );
  return [...split('cluster', cluster.rules), ...split('namespace', namespaced?.rules ?? [])];
}

/**
 * The container args of a deploy/ workload for a process on this machine: the listener flags
 * are left to `startDaemon`; the downward API's pod namespace is `ns`, its node name `node`.
 */
export function manifestArgs(
  kind: 'DaemonSet' | 'Deployment',
  name: string,
  ns: string,
  node = hostname(),
): string[] {
  const w = manifest<V1DaemonSet | V1Deployment>(kind, name);
  const args = w.spec?.template.spec?.containers[0]?.args ?? [];
  return args
    .filter((a) => !LISTENER_FLAGS.test(a))
    .map((a) => a.replace('$(POD_NAMESPACE)', ns).replace('$(NODE_NAME)', node));
}

/**
 * How the image runs a deploy/ workload's container: node's own flags from its command, which
 * must run the Containerfile's ENTRYPOINT, and its literal environment (NODE_OPTIONS included).
 */
export function manifestNode(
  kind: 'DaemonSet' | 'Deployment',
  name: string,
): { flags: string[]; env: Record<string, string> } {
  const c = manifest<V1DaemonSet | V1Deployment>(kind, name).spec?.template.spec?.containers[0];
  const containerfile = readFileSync(join(deployDir, '..', 'Containerfile'), 'utf8');
  const entry = JSON.parse(/^ENTRYPOINT (.*)$/m.exec(containerfile)?.[1] ?? '[]') as string[];
  const command = c?.command ?? entry;
  if (command[0] !== entry[0] || command.at(-1) !== entry.at(-1))
    throw new Error(`${name} does not run the image's ENTRYPOINT: ${command.join(' ')}`);
  const env: Record<string, string> = {};
  for (const e of c?.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
  return { flags: command.slice(1, -1), env };
}
