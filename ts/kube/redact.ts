// The last guard between a credential and a log line: every message a daemon logs or prints
// goes through `redactCredentials`, which removes the credentials this process has sent and
// anything shaped like one. A leaf module, so the loggers and error formatting can share it.

const REDACTED = '[redacted]';
/** Credentials this process has sent: redacted wherever they appear, whatever surrounds them. */
const known = new Set<string>();

/** Remembers a credential so that `redactCredentials` removes it from any text. */
export function rememberCredential(secret: string): void {
  // Short values would redact ordinary words; no real token is that short.
  if (secret.length < 8 || known.has(secret)) return;
  // The newest ones: rotated tokens keep coming, the oldest are long out of use.
  if (known.size >= 64) known.delete(known.values().next().value as string);
  known.add(secret);
}

const PATTERNS: [RegExp, string][] = [
  // Authorization header values, whatever quotes or separators surround them.
  // (Case-sensitive: "basic" and "bearer" in ordinary words are not schemes.)
  [/\b(Bearer|Basic)\s+[^\s'",;]+/g, `$1 ${REDACTED}`],
  // userinfo in a URL: https://user:password@host
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^/@\s'"]*@/gi, `$1${REDACTED}@`],
  // JWTs (service-account and OIDC tokens) on their own.
  [/\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g, REDACTED],
  // Token and secret fields of ExecCredential output or a kubeconfig quoted back by a parser
  // (an auth-provider block's refresh-token, access-token, client-secret included).
  // Not a path ending in such a name (`…/serviceaccount/token: file is empty`); the quotes,
  // escaped or not (a klog line quotes a JSON message), stay.
  [
    /(?<![\w/.-])(\\?["']?(?:(?:refresh|access|id)[-_]?token|token|password|secret|client[-_]?secret|client-key-data|clientKeyData)\\?["']?\s*[:=]\s*\\?["']?)[^"'\\\s,}]+/gi,
    `$1${REDACTED}`,
  ],
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g, REDACTED],
];

/** `text` without any credential it may quote (header values, URL passwords, tokens, keys). */
export function redactCredentials(text: string): string {
  let out = text;
  for (const secret of known) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  for (const [re, by] of PATTERNS) out = out.replace(re, by);
  return out;
}
