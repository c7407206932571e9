// `renderAdmissionPolicy`: a SysctlPolicy / SysctlNamePolicy (and optionally the kubelet
// allowlist) as a ValidatingAdmissionPolicy + binding (admissionregistration.k8s.io/v1) whose
// CEL decides every pod exactly as the in-process `PodAdmitChain` of the same policy does.
// The compiled rules, their detail texts and the value syntax come from the native core, and
// allowlist entries from the native allowlist, so the rules are written once; this module only
// translates them to CEL. Denials carry the kubelet-style messages of the in-process handlers.
import { describe, KubenodeError, KubenodeRangeError, KubenodeTypeError } from '../../errors.js';
import type { AllowlistEntry } from '../allowlist.js';
import {
  badValueMessage,
  type CompiledEntry,
  notAllowedMessage,
  SysctlNamePolicy,
  SysctlPolicy,
} from '../policy.js';
import { LABEL_SELECTOR_SCHEMA } from '../policy-schema.js';
import { checkSchema } from '../schema-check.js';
import { type IntRange, integerFieldsSource, regexLiteral, valueSyntax } from '../values.js';
import { anyOf, celList, celString } from './cel.js';
import {
  type KubeletAllowlistOptions,
  kubeletAllowlist,
  kubeletMessages,
  type MessageTemplate,
  templateOf,
} from './kubelet.js';
import {
  DEFAULT_VALIDATION_ACTIONS,
  type ValidationAction,
  validationActionsErrors,
} from './validation-actions.js';

/** Workload kinds whose pod templates can be validated too. */
export const WORKLOAD_KINDS = [
  'Deployment',
  'StatefulSet',
  'DaemonSet',
  'ReplicaSet',
  'Job',
  'CronJob',
] as const;
/** One of `WORKLOAD_KINDS`. */
export type WorkloadKind = (typeof WORKLOAD_KINDS)[number];

const RESOURCES: Record<WorkloadKind, { group: string; resource: string }> = {
  Deployment: { group: 'apps', resource: 'deployments' },
  StatefulSet: { group: 'apps', resource: 'statefulsets' },
  DaemonSet: { group: 'apps', resource: 'daemonsets' },
  ReplicaSet: { group: 'apps', resource: 'replicasets' },
  Job: { group: 'batch', resource: 'jobs' },
  CronJob: { group: 'batch', resource: 'cronjobs' },
};

/** A metav1.LabelSelector. */
export interface LabelSelector {
  /** Labels that must all be present with these values. */
  matchLabels?: Record<string, string>;
  /** Requirements that must all hold. */
  matchExpressions?: {
    /** Label key. */
    key: string;
    /** How the label's value relates to `values`. */
    operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    /** Values for `In`/`NotIn`; empty or absent for `Exists`/`DoesNotExist`. */
    values?: string[];
  }[];
}

/** Options of `renderAdmissionPolicy`. */
export interface RenderAdmissionPolicyOptions extends KubeletAllowlistOptions {
  /** Name of the policy; the binding is `<name>-binding`. Default `kubenode-sysctl-policy`. */
  name?: string;
  /** Only pods in namespaces matching this selector are checked. */
  namespaceSelector?: LabelSelector;
  /** Also check the pod templates of these workload kinds (on create and update). */
  workloadKinds?: readonly WorkloadKind[];
  /**
   * The binding's `validationActions` (default `['Deny']`): `Warn` and `Audit` roll a policy out
   * without refusing anything; `Deny` and `Warn` together are refused, as the API server does.
   */
  validationActions?: readonly ValidationAction[];
}

/** Either node-side policy: names only (`SysctlNamePolicy`) or names with values (`SysctlPolicy`). */
export type AnyPolicy = SysctlPolicy | SysctlNamePolicy;

/** Plain objects ready for `@kubernetes/client-node` (or YAML); deterministic for one input. */
export type RenderedAdmissionPolicy = [Record<string, unknown>, Record<string, unknown>];

const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/**
 * The API server's CEL parser refuses an expression longer than this many code points (cel-go's
 * default `ExpressionSizeCodePointLimit`, which k8s.io/apiserver v0.37 keeps): such a policy
 * would fail at `kubectl apply`, so rendering refuses it instead.
 */
export const MAX_CEL_EXPRESSION_CODE_POINTS = 100_000;

/**
 * Renders a policy (and/or the kubelet allowlist the options describe) as an
 * `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicy whose CEL rejects the pods the
 * node would reject, with the same messages, plus its ValidatingAdmissionPolicyBinding.
 * @param policy the policy, or null to render only the kubelet allowlist.
 * @returns `[policy, binding]`.
 * @throws KubenodeTypeError (`ERR_KUBENODE_INVALID_ARG`) for a bad policy or option (name not a DNS
 * subdomain, unknown workload kind, malformed selector, validation actions the API server
 * refuses) or when there is nothing to render.
 */
export function renderAdmissionPolicy(
  policy: AnyPolicy | null,
  options: RenderAdmissionPolicyOptions = {},
): RenderedAdmissionPolicy {
  if (policy !== null && !(policy instanceof SysctlPolicy) && !(policy instanceof SysctlNamePolicy)) {
    throw new KubenodeTypeError(
      `policy must be a SysctlPolicy, SysctlNamePolicy or null, got ${describe(policy)}`,
    );
  }
  if (typeof options !== 'object' || options === null) {
    throw new KubenodeTypeError(`options must be an object, got ${describe(options)}`);
  }
  const name = options.name ?? 'kubenode-sysctl-policy';
  if (typeof name !== 'string' || name.length > 253 - '-binding'.length || !NAME.test(name)) {
    throw new KubenodeTypeError(`options.name must be a DNS subdomain name, got ${describe(name)}`);
  }
  const kinds = checkKinds(options.workloadKinds);
  const actions = options.validationActions ?? DEFAULT_VALIDATION_ACTIONS;
  const actionErrors = validationActionsErrors(actions, 'options.validationActions');
  if (actionErrors.length > 0) throw new KubenodeTypeError(actionErrors.join('; '));
  if (options.includeSafeSysctls !== undefined && typeof options.includeSafeSysctls !== 'boolean') {
    throw new KubenodeTypeError(
      `options.includeSafeSysctls must be a boolean, got ${describe(options.includeSafeSysctls)}`,
    );
  }
  if (options.allowedUnsafeSysctls !== undefined && !Array.isArray(options.allowedUnsafeSysctls)) {
    throw new KubenodeTypeError(
      `options.allowedUnsafeSysctls must be an array, got ${describe(options.allowedUnsafeSysctls)}`,
    );
  }
  if (options.namespaceSelector !== undefined) {
    const bad = checkSchema(LABEL_SELECTOR_SCHEMA, options.namespaceSelector, 'options.namespaceSelector');
    if (bad) throw new KubenodeTypeError(`${bad.path} ${bad.message}`);
  }
  const allowlist = kubeletAllowlist(options);
  if (policy === null && allowlist === null) {
    throw new KubenodeTypeError(
      'nothing to render: give a policy, includeSafeSysctls or allowedUnsafeSysctls',
    );
  }

  const variables = [
    { name: 'spec', expression: specExpression(kinds) },
    {
      name: 'items',
      expression:
        'has(variables.spec.securityContext) && has(variables.spec.securityContext.sysctls) ? ' +
        `variables.spec.securityContext.sysctls.map(s, {"n": ${normalized('s.name')}, ` +
        '"v": has(s.value) ? s.value : ""}) : []',
    },
  ];
  const validations: Record<string, unknown>[] = [];
  if (allowlist !== null) {
    variables.push(
      { name: 'hostNetwork', expression: 'has(variables.spec.hostNetwork) && variables.spec.hostNetwork' },
      { name: 'hostIPC', expression: 'has(variables.spec.hostIPC) && variables.spec.hostIPC' },
      // Unset means the host's user namespace, as in the kubelet.
      { name: 'hostUsers', expression: '!has(variables.spec.hostUsers) || variables.spec.hostUsers' },
      {
        name: 'kubeletDenied',
        expression: `variables.items.map(x, ${kubeletVerdict(allowlist.entries(), 'string(x.n)')}).filter(m, m != "")`,
      },
    );
    validations.push({
      expression: 'size(variables.kubeletDenied) == 0',
      messageExpression: 'variables.kubeletDenied[0]',
      reason: 'Forbidden',
    });
  }
  if (policy !== null) {
    variables.push({
      name: 'policyDenied',
      expression: `variables.items.map(x, ${policyVerdict(policy, 'string(x.n)', 'string(x.v)')}).filter(m, m != "")`,
    });
    validations.push({
      expression: 'size(variables.policyDenied) == 0',
      messageExpression: 'variables.policyDenied[0]',
      reason: 'Forbidden',
    });
  }

  for (const e of [...variables, ...validations])
    checkExpressionSize(e as { name?: string; expression: string });

  const vap = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name, labels: { 'app.kubernetes.io/managed-by': 'kubenode' } },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: { resourceRules: resourceRules(kinds) },
      variables,
      validations,
    },
  };
  const binding = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: `${name}-binding`, labels: { 'app.kubernetes.io/managed-by': 'kubenode' } },
    spec: {
      policyName: name,
      validationActions: [...actions],
      ...(options.namespaceSelector
        ? { matchResources: { namespaceSelector: options.namespaceSelector } }
        : {}),
    },
  };
  return [vap, binding];
}

function checkExpressionSize(e: { name?: string; expression: string }): void {
  let size = 0;
  for (const _ of e.expression) size++;
  if (size > MAX_CEL_EXPRESSION_CODE_POINTS) throw tooLarge(e.name);
}

function tooLarge(variable: string | undefined): KubenodeRangeError {
  const what = variable !== undefined ? `variable ${JSON.stringify(variable)}` : 'a validation';
  return new KubenodeRangeError(
    `policy too large for the API server: its CEL ${what} passes the API server's limit of ` +
      `${MAX_CEL_EXPRESSION_CODE_POINTS} characters per expression; use fewer entries ` +
      '(a pattern such as net.ipv4.conf.*.rp_filter covers many names)',
  );
}

function checkKinds(kinds: unknown): WorkloadKind[] {
  if (kinds === undefined) return [];
  if (!Array.isArray(kinds))
    throw new KubenodeTypeError(`options.workloadKinds must be an array, got ${describe(kinds)}`);
  for (const k of kinds) {
    if (!(WORKLOAD_KINDS as readonly unknown[]).includes(k)) {
      throw new KubenodeTypeError(
        `options.workloadKinds: unknown kind ${describe(k)} (want ${WORKLOAD_KINDS.join(', ')})`,
      );
    }
  }
  // Canonical order, so equal inputs render equal objects.
  return WORKLOAD_KINDS.filter((k) => kinds.includes(k));
}

function resourceRules(kinds: WorkloadKind[]): Record<string, unknown>[] {
  const rules: Record<string, unknown>[] = [
    // Pod sysctls cannot change after creation; updates of existing pods are left alone.
    { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] },
  ];
  for (const group of ['apps', 'batch']) {
    const resources = kinds.filter((k) => RESOURCES[k].group === group).map((k) => RESOURCES[k].resource);
    if (resources.length > 0) {
      rules.push({ apiGroups: [group], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources });
    }
  }
  return rules;
}

/** The pod spec of the object: the pod's own, or its template's. */
function specExpression(kinds: WorkloadKind[]): string {
  if (kinds.length === 0) return 'object.spec';
  const template = 'object.spec.template.spec';
  if (!kinds.includes('CronJob')) return `object.kind == "Pod" ? object.spec : ${template}`;
  return `object.kind == "Pod" ? object.spec : object.kind == "CronJob" ? object.spec.jobTemplate.spec.template.spec : ${template}`;
}

/** `NormalizeName` in CEL: a slash-first name has `.` and `/` swapped (`#` never occurs in valid names). */
function normalized(v: string): string {
  return `(${v}.matches("^[^./]*/") ? ${v}.replace(".", "#").replace("/", ".").replace("#", "/") : ${v})`;
}

/** One name against entries: exact keys by `in`, prefixes by `startsWith`. */
function matchesAny(entries: readonly AllowlistEntry[], n: string): string {
  const exact = entries.filter((e) => !e.prefix).map((e) => e.key);
  const terms = exact.length > 0 ? [`${n} in ${celList(exact)}`] : [];
  for (const e of entries) if (e.prefix) terms.push(`${n}.startsWith(${celString(e.key)})`);
  return anyOf(terms);
}

/** `"forbidden sysctl: \"<n>\" " + rest`: upstream's message around a normalised name. */
function forbidden(n: string, [prefix, suffix]: MessageTemplate): string {
  return `${celString(prefix)} + ${n} + ${celString(suffix)}`;
}

/**
 * The kubelet's `validateSysctl` for a normalised name: "" when allowed, else the message
 * `SysctlAllowlist.admit` gives (not allowlisted, or refused with hostNetwork/hostIPC/host users).
 */
function kubeletVerdict(entries: readonly AllowlistEntry[], n: string): string {
  const net = entries.filter((e) => e.namespace === 'Net');
  const ipc = entries.filter((e) => e.namespace === 'IPC');
  const user = entries.filter((e) => e.namespace === 'User');
  const rest = entries.filter(
    (e) => e.namespace !== 'Net' && e.namespace !== 'IPC' && e.namespace !== 'User',
  );
  const m = kubeletMessages();
  return (
    `((${matchesAny(net, n)}) ? (variables.hostNetwork ? ${forbidden(n, m.hostNet)} : "") : ` +
    `(${matchesAny(ipc, n)}) ? (variables.hostIPC ? ${forbidden(n, m.hostIpc)} : "") : ` +
    `(${matchesAny(user, n)}) ? (variables.hostUsers ? ${forbidden(n, m.hostUser)} : "") : ` +
    `(${matchesAny(rest, n)}) ? "" : ${forbidden(n, m.notAllowlisted)})`
  );
}

/**
 * The policy's verdict for a normalised name and raw value: "" when allowed, else the message
 * the policy's `admit` gives (`notAllowedMessage` / `badValueMessage`).
 */
function policyVerdict(policy: AnyPolicy, n: string, v: string): string {
  const refused = forbidden(n, templateOf(notAllowedMessage('a.b'), 'a.b'));
  if (policy instanceof SysctlNamePolicy) {
    const r = policy.rules();
    if (r.all) return '""';
    const terms = r.exact.length > 0 ? [`${n} in ${celList(r.exact)}`] : [];
    for (const p of r.prefixes) terms.push(`${n}.startsWith(${celString(p)})`);
    return `((${anyOf(terms)}) ? "" : ${refused})`;
  }
  // First match decides. A flat list (one verdict per entry, NO_MATCH where the name does not
  // match, NO_RULE last) whose first real verdict is taken: a chain of conditionals would nest
  // one level per entry, and the API server's CEL parser stops at 250 levels. Entries give only
  // the detail of a refusal; the message around it is written once, for the verdict taken.
  const terms: string[] = [];
  let length = 0;
  for (const e of policy.rules()) {
    const term = `${n}.matches(${celString(namePattern(e))}) ? ${valueVerdict(e, v, celString)} : ${NO_MATCH}`;
    // Refused as soon as it is certain, rather than after building megabytes of CEL.
    length += term.length;
    if (length > MAX_CEL_EXPRESSION_CODE_POINTS) throw tooLarge('policyDenied');
    terms.push(term);
  }
  const [head, rest] = templateOf(badValueMessage('a.b', DETAIL), 'a.b');
  const at = rest.indexOf(DETAIL);
  if (at < 0)
    throw new KubenodeError('ERR_KUBENODE_INTERNAL', `no detail in message ${JSON.stringify(rest)}`);
  const bad = `${celString(head)} + ${n} + ${celString(rest.slice(0, at))} + d + ${celString(rest.slice(at + DETAIL.length))}`;
  const first = `[${[...terms, NO_RULE].join(', ')}].filter(m, m != ${NO_MATCH})[0]`;
  return `[${first}].map(d, d == "" ? "" : d == ${NO_RULE} ? ${refused} : ${bad})[0]`;
}

/** An entry's verdict where its name pattern does not match, and the verdict when no entry
 * matches: never "" (allowed) nor a refusal's detail. */
const NO_MATCH = '"-"';
const NO_RULE = '"+"';
/** Stands for the detail in the message template. */
const DETAIL = 'DETAIL';

function namePattern(e: CompiledEntry): string {
  return `^${e.segments.map((s) => (s === '*' ? '[^.]*' : regexLiteral(s))).join('\\.')}$`;
}

function bounded(x: string, r: IntRange): string {
  const t: string[] = [];
  if (r.min !== undefined) t.push(`${x} >= ${r.min}`);
  if (r.max !== undefined) t.push(`${x} <= ${r.max}`);
  return t.join(' && ');
}

/**
 * Mirrors the core's value rule: "" when the value complies, else `fail(detail)` (a CEL string
 * expression) with the detail the core reports. The cheap length check comes first so that
 * long values never reach a regex (CEL charges by length).
 */
function valueVerdict(e: CompiledEntry, v: string, fail: (detail: string) => string): string {
  const { space, intField, maxMagnitude, maxValueLength } = valueSyntax();
  const d = e.details;
  if (d.tooLong === undefined) return '""';
  const checked = (body: string) => `(size(${v}) > ${maxValueLength} ? ${fail(d.tooLong!)} : ${body})`;
  if (e.values) {
    const alts = [...e.values].map((c) => (c === '' ? '' : c.split(' ').map(regexLiteral).join(`${space}+`)));
    const re = `^${space}*(?:${alts.join('|')})${space}*$`;
    return checked(`(${v}.matches(${celString(re)}) ? "" : ${fail(d.values!)})`);
  }
  const tokens = `${v}.findAll(${celString(intField)})`;
  const int = (k: number) => `int(${tokens}[${k}])`;
  const shape = (count: number) =>
    `${v}.matches(${celString(integerFieldsSource(count))}) && ` +
    `${tokens}.all(t, int(t) >= ${-maxMagnitude} && int(t) <= ${maxMagnitude})`;
  if (e.fields) {
    const fields = e.fields;
    let inner = '""';
    for (let k = fields.length - 1; k >= 0; k--) {
      const test = bounded(int(k), fields[k]!);
      if (test !== '') inner = `((${test}) ? ${inner} : ${fail(d.fields![k]!)})`;
    }
    return checked(`(!(${shape(fields.length)}) ? ${fail(d.shape!)} : ${inner})`);
  }
  return checked(`(!(${shape(1)}) ? ${fail(d.shape!)} : (${bounded(int(0), e)}) ? "" : ${fail(d.range!)})`);
}
