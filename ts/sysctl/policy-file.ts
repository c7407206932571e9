// A sysctl policy file (YAML or JSON, schema in ./policy-schema.ts): one file drives node
// admission (`admitChain()`, the kubelet's PodAdmitChain) and API admission (`render()`, a
// ValidatingAdmissionPolicy and its binding), so both decide alike.
import { PodAdmitChain, type PodAdmitChainOptions } from '../admission/index.js';
import { describe, KubenodeError, KubenodeTypeError } from '../errors.js';
import { InputTooLargeError, MAX_OBJECT_BYTES, readCapped } from '../read-capped.js';
import { parseDocuments } from '../yaml-documents.js';
import type { KubeletSysctlConfig } from './config.js';
import { defaultPodSysctlsOf } from './defaults.js';
import { SysctlNamePolicy, type SysctlPolicy, type SysctlPolicyEntry, sysctlPolicyAt } from './policy.js';
import { SYSCTL_POLICY_SCHEMA } from './policy-schema.js';
import {
  type LabelSelector,
  type RenderAdmissionPolicyOptions,
  type RenderedAdmissionPolicy,
  renderAdmissionPolicy,
  type WorkloadKind,
} from './render/admission-policy.js';
import { kubeletAllowlist } from './render/kubelet.js';
import { type ValidationAction, validationActionsErrors } from './render/validation-actions.js';
import { checkSchema } from './schema-check.js';

/** A policy file that cannot be read, parsed or that breaks the schema; `path` names the field. */
export class SysctlPolicyFileError extends KubenodeError {
  constructor(
    code: 'ERR_KUBENODE_IO' | 'ERR_KUBENODE_PARSE' | 'ERR_KUBENODE_INVALID_ARG',
    message: string,
    /** Path of the offending field (e.g. `spec.sysctls[0].name`); `''` for the whole file. */
    readonly path: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
    this.name = 'SysctlPolicyFileError';
  }
}

/**
 * The `spec` of a policy file (see `SYSCTL_POLICY_SCHEMA`). Set `sysctls` or
 * `allowedSysctls` (not both), or only the kubelet fields.
 */
export interface SysctlPolicyFileSpec {
  /** `SysctlPolicy` rules (alternative 2): the first entry whose name pattern matches decides. */
  sysctls?: SysctlPolicyEntry[];
  /** `SysctlNamePolicy` rules (alternative 1): names or prefixes ending in `*`; `*` allows all. */
  allowedSysctls?: string[];
  /** Also enforce the kubelet's allowlist: the safe list plus `allowedUnsafeSysctls`. */
  includeSafeSysctls?: boolean;
  /** The kubelet's `--allowed-unsafe-sysctls` (names or patterns ending in `*`). */
  allowedUnsafeSysctls?: string[];
  /** Kernel for the safe list (default: the running kernel). */
  kernelVersion?: string;
  /** Kubernetes release for the safe list (default: the newest known). */
  kubernetesVersion?: string;
  /** API admission only checks pods in namespaces matching this selector. */
  namespaceSelector?: LabelSelector;
  /** API admission also checks the pod templates of these workload kinds. */
  workloadKinds?: WorkloadKind[];
  /** What the API server does with a refused pod (default `[Deny]`); `Warn`/`Audit` to roll out. */
  validationActions?: ValidationAction[];
}

/**
 * A checked sysctl policy file (`apiVersion: kubenode.io/v1alpha1`, `kind: SysctlPolicy`): one
 * source for node admission (`admitChain`) and API admission (`render`).
 * @throws SysctlPolicyFileError (`ERR_KUBENODE_INVALID_ARG`) when the document breaks the schema, sets
 * both `sysctls` and `allowedSysctls`, has no rule, or has a bad pattern or kernel version.
 */
export class SysctlPolicyFile {
  /** `metadata.name`; also the rendered policy's name. */
  readonly name: string;
  /** The file's `spec`, as parsed. */
  readonly spec: Readonly<SysctlPolicyFileSpec>;
  /** The SysctlPolicy (`sysctls`) or SysctlNamePolicy (`allowedSysctls`), if the file has one. */
  readonly policy: SysctlPolicy | SysctlNamePolicy | null;

  /** Checks a parsed document against the schema and the policy rules. */
  constructor(doc: unknown, source = 'policy') {
    const bad = checkSchema(SYSCTL_POLICY_SCHEMA, doc);
    if (bad) {
      throw new SysctlPolicyFileError(
        'ERR_KUBENODE_INVALID_ARG',
        `${source}: ${bad.path || 'document'} ${bad.message}`,
        bad.path,
      );
    }
    const d = doc as { metadata: { name: string }; spec: SysctlPolicyFileSpec };
    this.name = d.metadata.name;
    this.spec = d.spec;
    const s = d.spec;
    if (s.sysctls !== undefined && s.allowedSysctls !== undefined) {
      throw new SysctlPolicyFileError(
        'ERR_KUBENODE_INVALID_ARG',
        `${source}: spec sets both sysctls and allowedSysctls; use one`,
        'spec',
      );
    }
    if (
      s.sysctls === undefined &&
      s.allowedSysctls === undefined &&
      !s.includeSafeSysctls &&
      !s.allowedUnsafeSysctls?.length
    ) {
      throw new SysctlPolicyFileError(
        'ERR_KUBENODE_INVALID_ARG',
        `${source}: spec has no rule: set sysctls, allowedSysctls, includeSafeSysctls or allowedUnsafeSysctls`,
        'spec',
      );
    }
    if (s.validationActions !== undefined) {
      const errors = validationActionsErrors(s.validationActions, 'spec.validationActions');
      if (errors.length > 0) {
        throw new SysctlPolicyFileError(
          'ERR_KUBENODE_INVALID_ARG',
          `${source}: ${errors.join('; ')}`,
          'spec.validationActions',
        );
      }
    }
    this.policy = SysctlPolicyFile.#compile(s, source);
    // Build the kubelet allowlist now so a bad pattern or kernel version fails at load time.
    try {
      kubeletAllowlist(s);
    } catch (e) {
      throw new SysctlPolicyFileError(
        'ERR_KUBENODE_INVALID_ARG',
        `${source}: spec: ${(e as Error).message}`,
        'spec',
        {
          cause: e,
        },
      );
    }
  }

  static #compile(s: SysctlPolicyFileSpec, source: string): SysctlPolicy | SysctlNamePolicy | null {
    const field = s.sysctls !== undefined ? 'spec.sysctls' : 'spec.allowedSysctls';
    try {
      // Errors name the file's field (`spec.sysctls[0]…`).
      if (s.sysctls !== undefined) return sysctlPolicyAt(s.sysctls, field);
      if (s.allowedSysctls !== undefined) return new SysctlNamePolicy(s.allowedSysctls);
      return null;
    } catch (e) {
      const message = `${source}: ${(e as Error).message}`;
      throw new SysctlPolicyFileError('ERR_KUBENODE_INVALID_ARG', message, field, { cause: e });
    }
  }

  /** Render options of the file (its name, selector, kinds, kubelet settings). */
  renderOptions(overrides: RenderAdmissionPolicyOptions = {}): RenderAdmissionPolicyOptions {
    const s = this.spec;
    return {
      name: this.name,
      ...(s.includeSafeSysctls !== undefined ? { includeSafeSysctls: s.includeSafeSysctls } : {}),
      ...(s.allowedUnsafeSysctls !== undefined ? { allowedUnsafeSysctls: s.allowedUnsafeSysctls } : {}),
      ...(s.kernelVersion !== undefined ? { kernelVersion: s.kernelVersion } : {}),
      ...(s.kubernetesVersion !== undefined ? { kubernetesVersion: s.kubernetesVersion } : {}),
      ...(s.namespaceSelector !== undefined ? { namespaceSelector: s.namespaceSelector } : {}),
      ...(s.workloadKinds !== undefined ? { workloadKinds: s.workloadKinds } : {}),
      ...(s.validationActions !== undefined ? { validationActions: s.validationActions } : {}),
      ...overrides,
    };
  }

  /** The ValidatingAdmissionPolicy and binding for this file. */
  render(overrides: RenderAdmissionPolicyOptions = {}): RenderedAdmissionPolicy {
    return renderAdmissionPolicy(this.policy, this.renderOptions(overrides));
  }

  /**
   * The kubelet's `defaultPodSysctls` this file refuses, in the configuration's order: each
   * default is judged as a pod setting it alone, by the policy and (when the file asks for it)
   * the kubelet allowlist. The pod has its own user namespace, the only kind a `user.*` default
   * reaches; its host namespaces are otherwise the pod's own.
   */
  checkDefaults(config: KubeletSysctlConfig): DefaultOutsidePolicy[] {
    const handlers = [
      ...(this.policy ? [this.policy] : []),
      ...[kubeletAllowlist(this.spec)].filter((a) => a !== null),
    ];
    const outside: DefaultOutsidePolicy[] = [];
    for (const { name, value } of defaultPodSysctlsOf(config)) {
      const pod = { spec: { hostUsers: false, securityContext: { sysctls: [{ name, value }] } } };
      for (const h of handlers) {
        const r = h.admit({ pod });
        if (!r.admit) {
          outside.push({ name, value, message: r.message ?? '' });
          break;
        }
      }
    }
    return outside;
  }

  /** The node side: the kubelet allowlist (if the file asks for it), then the policy. */
  admitChain(options: PodAdmitChainOptions = {}): PodAdmitChain {
    const allowlist = kubeletAllowlist(this.spec);
    return new PodAdmitChain(
      [...(allowlist ? [allowlist] : []), ...(this.policy ? [this.policy] : [])],
      options,
    );
  }
}

/** A node default the policy refuses. */
export interface DefaultOutsidePolicy {
  /** The name as the kubelet configuration spells it. */
  name: string;
  /** The value the kubelet configuration gives it. */
  value: string;
  /** Why: the refusing handler's message. */
  message: string;
}

/** Parses one YAML (or JSON) document into a checked policy file. */
export function parseSysctlPolicyFile(text: string, source = 'policy'): SysctlPolicyFile {
  if (typeof text !== 'string') throw new KubenodeTypeError(`text must be a string, got ${describe(text)}`);
  let docs: unknown[];
  try {
    docs = parseDocuments(text);
  } catch (e) {
    // Syntax errors, a key given twice, an alias bomb (past yaml's alias cap).
    throw new SysctlPolicyFileError(
      'ERR_KUBENODE_PARSE',
      `${source}: malformed YAML: ${(e as Error).message}`,
      '',
      {
        cause: e,
      },
    );
  }
  if (docs.length !== 1) {
    throw new SysctlPolicyFileError(
      'ERR_KUBENODE_PARSE',
      `${source}: expected one YAML document, found ${docs.length}`,
      '',
    );
  }
  return new SysctlPolicyFile(docs[0], source);
}

/** Reads (at most `MAX_OBJECT_BYTES`, 3 MiB) and checks a policy file. */
export async function loadSysctlPolicyFile(file: string): Promise<SysctlPolicyFile> {
  if (typeof file !== 'string') throw new KubenodeTypeError(`file must be a string, got ${describe(file)}`);
  let text: string;
  try {
    // Capped as pod files are: the rendered policy is an API object, bounded by the same limit.
    text = await readCapped(file, MAX_OBJECT_BYTES);
  } catch (e) {
    if (e instanceof InputTooLargeError) {
      throw new SysctlPolicyFileError('ERR_KUBENODE_INVALID_ARG', `${file}: ${e.message}`, '', { cause: e });
    }
    throw new SysctlPolicyFileError('ERR_KUBENODE_IO', `cannot read ${file}: ${(e as Error).message}`, '', {
      cause: e,
    });
  }
  return parseSysctlPolicyFile(text, file);
}
