// Public API of kubenode. Each subsystem is a namespace export.
export * as admission from './admission/index.js';
export * as bitmap from './bitmap.js';
export * as conntrack from './conntrack/index.js';
export * as doctor from './doctor.js';
export {
  type AnyKubenodeError,
  type BuiltinKubenodeError,
  type BuiltinKubenodeErrorClass,
  isKubenodeError,
  KubenodeError,
  type KubenodeErrorCode,
  type KubenodeErrorKind,
  type KubenodeErrorOptions,
  KubenodeRangeError,
  KubenodeTypeError,
} from './errors.js';
export * as kube from './kube/index.js';
export { nativePath } from './native.js';
export * as servicecidr from './servicecidr/index.js';
export * as sysctl from './sysctl/index.js';
export * as userns from './userns/index.js';
