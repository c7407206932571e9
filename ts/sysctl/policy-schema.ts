// JSON schema of a sysctl policy file; the loader validates against this object, and the
// committed schemas/sysctl-policy.schema.json is checked to equal it.
import { POLICY_ENTRY_NAME_PATTERN } from './name-syntax.js';

const intRange = {
  type: 'object',
  additionalProperties: false,
  properties: { min: { type: 'integer' }, max: { type: 'integer' } },
} as const;

/** metav1.LabelSelector, as far as the API server's validation of its shape goes. */
export const LABEL_SELECTOR_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    matchLabels: { type: 'object', additionalProperties: { type: 'string' } },
    matchExpressions: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['key', 'operator'],
        properties: {
          key: { type: 'string', minLength: 1 },
          operator: { enum: ['In', 'NotIn', 'Exists', 'DoesNotExist'] },
          values: { type: 'array', items: { type: 'string' } },
        },
      },
    },
  },
} as const;

/** `apiVersion` of a sysctl policy file. */
export const SYSCTL_POLICY_API_VERSION = 'kubenode.io/v1alpha1';
/** `kind` of a sysctl policy file. */
export const SYSCTL_POLICY_KIND = 'SysctlPolicy';

/**
 * JSON Schema (draft 2020-12) of a sysctl policy file, as `SysctlPolicyFile` checks it; publish it
 * for editors and CI. Its keys are JSON Schema's own and are not documented one by one.
 */
export const SYSCTL_POLICY_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://kubenode.io/schemas/sysctl-policy.schema.json',
  title: 'kubenode SysctlPolicy',
  description:
    'One sysctl policy for both node admission (PodAdmitChain) and API admission (ValidatingAdmissionPolicy).',
  type: 'object',
  additionalProperties: false,
  required: ['apiVersion', 'kind', 'metadata', 'spec'],
  properties: {
    apiVersion: { enum: [SYSCTL_POLICY_API_VERSION] },
    kind: { enum: [SYSCTL_POLICY_KIND] },
    metadata: {
      type: 'object',
      additionalProperties: false,
      required: ['name'],
      properties: {
        name: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$', maxLength: 245 },
      },
    },
    spec: {
      type: 'object',
      additionalProperties: false,
      properties: {
        sysctls: {
          description:
            'SysctlPolicy (alternative 2): name patterns (segments or "*"), each with values, min/max or fields; the first matching entry decides.',
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['name'],
            properties: {
              name: { type: 'string', pattern: POLICY_ENTRY_NAME_PATTERN },
              values: { type: 'array', items: { type: 'string' } },
              min: { type: 'integer' },
              max: { type: 'integer' },
              fields: { type: 'array', minItems: 1, items: intRange },
            },
          },
        },
        allowedSysctls: {
          description: 'SysctlNamePolicy (alternative 1): names, or prefixes ending in "*"; "*" allows all.',
          type: 'array',
          items: { type: 'string', minLength: 1 },
        },
        includeSafeSysctls: {
          description: "Also enforce the kubelet's allowlist: the safe list plus allowedUnsafeSysctls.",
          type: 'boolean',
        },
        allowedUnsafeSysctls: { type: 'array', items: { type: 'string', minLength: 1 } },
        kernelVersion: { type: 'string', minLength: 1 },
        kubernetesVersion: { type: 'string', minLength: 1 },
        namespaceSelector: LABEL_SELECTOR_SCHEMA,
        workloadKinds: {
          type: 'array',
          items: { enum: ['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job', 'CronJob'] },
        },
        validationActions: {
          description:
            'What the API server does with a refused pod: Deny (default), Warn (a warning to the client), Audit (an audit annotation); Deny and Warn exclude each other.',
          type: 'array',
          items: { type: 'string' },
        },
      },
    },
  },
} as const;
