// The API transport kubenode's daemons use, for embedders: the cluster configuration as the
// daemons find it, and a small typed client over one HTTP/2 session per API server, with no
// @kubernetes/client-node unless a kubeconfig's user needs a credential plugin.
export {
  type KubeConfigSource,
  type LoadedKubeConfig,
  type LoadOptions,
  loadKubeConfig,
} from './config.js';
export { type ConnectionOptions, connectionFromKubeConfig, isKubeConnection } from './connection.js';
export { KubeCredentialError } from './credentials.js';
export {
  type ApiStatus,
  KubeApiError,
  type KubeConnection,
  type KubeRest,
  PATCH_APPLY,
  PATCH_JSON,
  PATCH_MERGE,
  PATCH_STRATEGIC,
  type QueryValue,
  type RequestCredentials,
  type RestLimits,
  type RestRequest,
  restClient,
  type TlsMaterial,
  type WatchEvent,
} from './rest.js';
export type { TokenFileAuth } from './token-file.js';
