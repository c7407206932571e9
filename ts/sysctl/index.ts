// Sysctl admission: upstream name rules, namespaces, the kernel-gated safe list, the kubelet
// allowlist and admit handler, API validation, Pod Security baseline, the alpha pod-level
// design (annotations and policies), and applying/probing sysctls in real namespaces.
export {
  type AdmitResult,
  type AllowlistEntry,
  type AllowlistOptions,
  FORBIDDEN_REASON,
  newAllowlist,
  SysctlAllowlist,
  SysctlAllowlistError,
} from './allowlist.js';
export {
  type AnnotationConversion,
  type AnnotationOptions,
  formatSysctlAnnotation,
  parseSysctlAnnotation,
  SYSCTLS_ANNOTATION,
  type Sysctl,
  SysctlAnnotationError,
  sysctlsFromAnnotations,
  UNSAFE_SYSCTLS_ANNOTATION,
} from './annotations.js';
export {
  type AppliedSysctl,
  type ApplyTarget,
  applySysctls,
  defaultProbeNames,
  type ProbeOutcome,
  type ProbeReport,
  type ProbeResult,
  probe,
} from './apply.js';
export {
  AUDITED_KINDS,
  type AuditedKind,
  type AuditFinding,
  type AuditOptions,
  type AuditSummary,
  auditSysctlPolicy,
  DEFAULT_CHUNK_SIZE,
  type KubeConfigLike,
} from './audit.js';
export { baselineAllowedSysctls, type CheckResult, checkBaseline, parsePolicyVersion } from './baseline.js';
export { allowlistFromKubeletConfig, type KubeletSysctlConfig, parseAllowedUnsafeSysctls } from './config.js';
export {
  DEFAULT_POD_SYSCTLS_GATE,
  defaultPodSysctlsOf,
  KubeletConfigError,
  sandboxSysctls,
  validateDefaultPodSysctls,
} from './defaults.js';
export {
  parseKernelVersion,
  type SafeSysctlList,
  type SafeSysctlOptions,
  type SafeSysctlRow,
  safeSysctlAllowlist,
  safeSysctlList,
  safeSysctlTable,
} from './kernel.js';
export {
  KubeletConfigFileError,
  kubeletSysctlConfig,
  loadKubeletSysctlConfig,
  parseKubeletSysctlConfig,
} from './kubelet-config.js';
export {
  getNamespace,
  isValidSysctlName,
  isValidSysctlPattern,
  type NamespaceInfo,
  normalizeName,
  SYSCTL_CONTAIN_SLASH_FMT,
  SYSCTL_CONTAIN_SLASH_PATTERN_FMT,
  SYSCTL_MAX_LENGTH,
} from './names.js';
export {
  type CompiledEntry,
  type CompiledEntryDetails,
  type PolicyAdmitResult,
  SysctlNamePolicy,
  SysctlPolicy,
  type SysctlPolicyEntry,
} from './policy.js';
export {
  type DefaultOutsidePolicy,
  loadSysctlPolicyFile,
  parseSysctlPolicyFile,
  SysctlPolicyFile,
  SysctlPolicyFileError,
  type SysctlPolicyFileSpec,
} from './policy-file.js';
export { SYSCTL_POLICY_API_VERSION, SYSCTL_POLICY_KIND, SYSCTL_POLICY_SCHEMA } from './policy-schema.js';
export {
  type AnyPolicy,
  type LabelSelector,
  MAX_CEL_EXPRESSION_CODE_POINTS,
  type RenderAdmissionPolicyOptions,
  type RenderedAdmissionPolicy,
  renderAdmissionPolicy,
  WORKLOAD_KINDS,
  type WorkloadKind,
} from './render/admission-policy.js';
export { type KubeletAllowlistOptions, kubeletAllowlist } from './render/kubelet.js';
export {
  DEFAULT_VALIDATION_ACTIONS,
  VALIDATION_ACTIONS,
  type ValidationAction,
  validationActionsErrors,
} from './render/validation-actions.js';
export type { FieldError, PodLike, SysctlNamespace, V1Sysctl } from './types.js';
export { type ValidatePodSysctlsOptions, validatePodSysctls, validateSysctlNames } from './validation.js';
export type { IntRange } from './values.js';
