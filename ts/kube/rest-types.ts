// The connection shapes of the lean transport (ts/kube/rest.ts), in a leaf module: the
// transport's wire and its public client both name them.

/** TLS material of a connection: PEM bytes, as a kubeconfig's `*-data` fields decode to. */
export interface TlsMaterial {
  /** CA bundle the server's certificate must chain to (default: Node's roots). */
  ca?: Buffer;
  /** Client certificate. */
  cert?: Buffer;
  /** Client certificate's private key. */
  key?: Buffer;
  /** `insecure-skip-tls-verify`: the server's certificate is not checked. */
  insecureSkipTLSVerify?: boolean;
  /** `tls-server-name`: the name the server's certificate must carry, instead of the host's. */
  serverName?: string;
}

/** What a request's credentials add: headers, and TLS material when a plugin hands out a client certificate. */
export interface RequestCredentials {
  /** The `Authorization` header value, if any. */
  authorization?: string;
  /** Replaces the connection's TLS material (a new value makes a new session). */
  tls?: TlsMaterial;
}

/**
 * Where an API server is and how to talk to it; built by `loadKubeConfig()` (ts/kube/config.ts)
 * or from a client-node `KubeConfig` by `connectionFromKubeConfig()`.
 */
export interface KubeConnection {
  /** `https://host:port` (or `http://` with no TLS), with an optional path prefix. */
  server: string;
  /** TLS material of the connection. */
  tls: TlsMaterial;
  /** Credentials of each request; rejects with a KubeCredentialError holding no secret. */
  credentials(): Promise<RequestCredentials>;
  /** The user entry's name, for messages. */
  user: string;
  /** Set when the connection takes its credentials through client-node (exec, auth-provider). */
  plugin?: 'exec' | 'auth-provider';
}
