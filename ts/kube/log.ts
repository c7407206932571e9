// Logs as JSON lines in component-base's JSON format (`--logging-format=json`): `ts` is the
// epoch time in milliseconds as a float, `msg` the message, `v` the verbosity of info lines,
// `err` the error of error lines, then the structured key/value pairs.

import type { KeyValues, Logger } from '../servicecidr/logger.js';
import { describeError } from './api-error.js';
import { redactCredentials } from './redact.js';

/** Milliseconds since the epoch with a fraction, like zap's epoch-millis encoder. */
const nowMs = (): number => performance.timeOrigin + performance.now();

function plain(v: unknown): unknown {
  // API errors as `HTTP 403: <the server's message>`, not client-node's dump of the response.
  if (v instanceof Error) return describeError(v);
  if (v === undefined) return null;
  return v;
}

function line(fields: KeyValues, kv: KeyValues | undefined): string {
  const out: KeyValues = { ...fields };
  for (const [k, v] of Object.entries(kv ?? {})) if (!(k in out)) out[k] = plain(v);
  let text: string;
  try {
    text = JSON.stringify(out);
  } catch {
    // A value JSON cannot encode (a cycle, a BigInt): keep the line, drop the values' detail.
    text = JSON.stringify(Object.fromEntries(Object.entries(out).map(([k, v]) => [k, String(v)])));
  }
  // Whatever a value holds (an error quoting a header, a URL with a password), no credential.
  return `${redactCredentials(text)}\n`;
}

/** A logger writing component-base JSON lines to `stream` (stderr by default). */
export function jsonLogger(verbosity = 0, stream: { write(s: string): unknown } = process.stderr): Logger {
  return {
    info(v, msg, kv) {
      if (v <= verbosity) stream.write(line({ ts: nowMs(), v, msg }, kv));
    },
    error(msg, err, kv) {
      stream.write(line({ ts: nowMs(), msg, err: String(plain(err)) }, kv));
    },
  };
}

/**
 * Escapes line breaks (`\n`, `\r`) so a value from outside (an API server's message, a path)
 * cannot end a text log line and forge the next one; the CLI's output escapes the other
 * control characters.
 */
export function oneLine(s: string): string {
  return s.replace(/[\n\r]/g, (c) => (c === '\n' ? '\\n' : '\\r'));
}
