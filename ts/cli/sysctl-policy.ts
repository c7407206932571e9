// `kubenode sysctl policy render|check-defaults|audit|schema`: a policy file as a
// ValidatingAdmissionPolicy and binding for the API server (the same file drives node admission
// through `PodAdmitChain`), and what it would refuse among a node's defaults or a cluster's objects.
import type { Command } from 'commander';
import { stringify } from 'yaml';
import { isKubenodeError } from '../errors.js';
import { loadKubeConfig } from '../kube/config.js';
import { redactCredentials } from '../kube/redact.js';
import { type AuditFinding, auditSysctlPolicy, DEFAULT_CHUNK_SIZE } from '../sysctl/audit.js';
import { validateDefaultPodSysctls } from '../sysctl/defaults.js';
import { loadKubeletSysctlConfig } from '../sysctl/kubelet-config.js';
import { loadSysctlPolicyFile, parseSysctlPolicyFile, type SysctlPolicyFile } from '../sysctl/policy-file.js';
import { SYSCTL_POLICY_SCHEMA } from '../sysctl/policy-schema.js';
import {
  type RenderAdmissionPolicyOptions,
  WORKLOAD_KINDS,
  type WorkloadKind,
} from '../sysctl/render/admission-policy.js';
import { parseLabelSelector } from '../sysctl/render/selector.js';
import type { ValidationAction } from '../sysctl/render/validation-actions.js';
import { MAX_OBJECT_BYTES, readInput } from './input.js';
import { CliExit, err, out, outputFormat, printJson, printStructured, badInput as usage } from './output.js';

function format(o: { output?: string }): 'yaml' | 'json' {
  const f = o.output ?? 'yaml';
  if (f !== 'yaml' && f !== 'json') usage(`unknown output format ${JSON.stringify(f)} (want yaml or json)`);
  return f;
}

/** Typed errors (bad file, bad selector) exit 2 with their message; anything else propagates. */
function orUsage<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (isKubenodeError(e)) usage(e.message);
    throw e;
  }
}

export function registerSysctlPolicy(sysctl: Command): void {
  const policy = sysctl
    .command('policy')
    .description('one sysctl policy file for node admission and API-server admission');

  policy
    .command('render')
    .description('render a policy file as a ValidatingAdmissionPolicy + ValidatingAdmissionPolicyBinding')
    .requiredOption(
      '--policy <file>',
      'sysctl policy file (YAML or JSON; see `kubenode sysctl policy schema`)',
    )
    .option(
      '--namespace-selector <selector>',
      'label selector of namespaces to enforce in (overrides the file)',
    )
    .option(
      '--workload-kinds <kinds>',
      `comma-separated, or "all": ${WORKLOAD_KINDS.join(', ')} (overrides the file)`,
    )
    .option('--name <name>', 'policy name (default: metadata.name of the file)')
    .option(
      '--validation-actions <actions>',
      "the binding's actions, comma-separated: Deny, or Warn and/or Audit to roll out (overrides the file)",
    )
    .option('-o, --output <format>', 'output format: yaml or json', 'yaml')
    .action(
      async (opts: {
        policy: string;
        namespaceSelector?: string;
        workloadKinds?: string;
        name?: string;
        validationActions?: string;
        output?: string;
      }) => {
        const f = format(opts);
        // Capped as pod files are: the rendered policy is an API object, bounded by the same limit.
        const text = await readInput(opts.policy, 'policy file', MAX_OBJECT_BYTES);
        const file: SysctlPolicyFile = orUsage(() => parseSysctlPolicyFile(text, opts.policy));
        const overrides: RenderAdmissionPolicyOptions = {};
        if (opts.name !== undefined) overrides.name = opts.name;
        if (opts.namespaceSelector !== undefined) {
          const sel = opts.namespaceSelector;
          overrides.namespaceSelector = orUsage(() => parseLabelSelector(sel));
        }
        if (opts.workloadKinds !== undefined) {
          overrides.workloadKinds =
            opts.workloadKinds === 'all'
              ? [...WORKLOAD_KINDS]
              : (opts.workloadKinds.split(',').map((k) => k.trim()) as WorkloadKind[]);
        }
        if (opts.validationActions !== undefined) {
          overrides.validationActions = opts.validationActions
            .split(',')
            .map((a) => a.trim()) as ValidationAction[];
        }
        const objects = orUsage(() => file.render(overrides));
        if (f === 'json') printJson({ apiVersion: 'v1', kind: 'List', items: objects });
        else out(objects.map((o) => stringify(o, { lineWidth: 0 })).join('---\n'));
      },
    );

  policy
    .command('check-defaults')
    .description(
      "check that a node's defaultPodSysctls stay inside a policy file; exit 0 inside, 1 outside (names listed)",
    )
    .requiredOption('--policy <file>', 'sysctl policy file (YAML or JSON)')
    .requiredOption('--kubelet-config <file>', 'KubeletConfiguration file with defaultPodSysctls')
    .option(
      '--kubernetes-version <version>',
      "the kubelet's release, e.g. v1.36 (default: the policy file's kubernetesVersion, else v1.37)",
    )
    .option('-o, --output <format>', 'output format: text, json or yaml', 'text')
    .action(
      async (opts: {
        policy: string;
        kubeletConfig: string;
        kubernetesVersion?: string;
        output?: string;
      }) => {
        const f = outputFormat(opts);
        const [file, kubelet] = await Promise.all([
          loadSysctlPolicyFile(opts.policy),
          loadKubeletSysctlConfig(opts.kubeletConfig),
        ]).catch((e: unknown) => {
          if (isKubenodeError(e)) usage(e.message);
          throw e;
        });
        const release = opts.kubernetesVersion ?? file.spec.kubernetesVersion;
        const config = release === undefined ? kubelet : { ...kubelet, kubernetesVersion: release };
        const errors = orUsage(() => validateDefaultPodSysctls(config));
        if (errors.length > 0) usage(`${opts.kubeletConfig}: ${errors.join('; ')}`);
        const outside = orUsage(() => file.checkDefaults(config));
        if (f !== 'text') printStructured(f, { inside: outside.length === 0, outside });
        else if (outside.length === 0) out('INSIDE\n');
        else for (const o of outside) out(`OUTSIDE ${o.name}=${o.value}: ${o.message}\n`);
        if (outside.length > 0) throw new CliExit(1);
      },
    );

  policy
    .command('audit')
    .description(
      'list the pods and pod templates in the cluster a policy file would refuse; exit 0 none, 1 some (listed)',
    )
    .requiredOption('--policy <file>', 'sysctl policy file (YAML or JSON)')
    .option('--kubeconfig <file>', 'kubeconfig file (default: KUBECONFIG, else the in-cluster configuration)')
    .option('--chunk-size <n>', "objects per LIST request (kubectl's default)", String(DEFAULT_CHUNK_SIZE))
    .option('-o, --output <format>', 'output format: text, json or yaml', 'text')
    .action(async (opts: { policy: string; kubeconfig?: string; chunkSize: string; output?: string }) => {
      const f = outputFormat(opts);
      const chunkSize = /^[1-9][0-9]*$/.test(opts.chunkSize) ? Number(opts.chunkSize) : Number.NaN;
      if (!Number.isSafeInteger(chunkSize)) {
        usage(`--chunk-size must be a positive integer, got ${JSON.stringify(opts.chunkSize)}`);
      }
      const [file, kc] = await Promise.all([
        loadSysctlPolicyFile(opts.policy),
        loadKubeConfig(opts.kubeconfig).then((l) => l.kubeConfig),
      ]).catch((e: unknown) => {
        if (isKubenodeError(e)) usage(redactCredentials(e.message));
        throw e;
      });
      // Text goes out as each page is decided; json and yaml keep only the refused objects.
      const refused: AuditFinding[] = [];
      const onFinding = (x: AuditFinding) => {
        if (f === 'text') out(`REFUSED ${x.kind} ${x.namespace}/${x.name}: ${x.message}\n`);
        else refused.push(x);
      };
      const summary = await auditSysctlPolicy(kc, file, { chunkSize, onFinding });
      if (summary.inconsistentResumes > 0)
        err(
          `warning: a continue token expired during the audit (${summary.inconsistentResumes}×); ` +
            'the API server continued the list at its newest revision, so objects listed after that ' +
            'may be newer than those before\n',
        );
      if (f !== 'text')
        printStructured(f, {
          policy: file.name,
          scanned: summary.scanned,
          refused,
          inconsistentResumes: summary.inconsistentResumes,
        });
      else out(`${summary.refused} of ${summary.scanned} objects refused by policy ${file.name}\n`);
      if (summary.refused > 0) throw new CliExit(1);
    });

  policy
    .command('schema')
    .description('print the JSON schema of sysctl policy files')
    .action(() => printJson(SYSCTL_POLICY_SCHEMA));
}
