// klog-style structured logging: `I1121 05:11:00.123456   42 servicecidr] "msg" key="value"`.
// Messages at verbosity `v` are printed when the logger's verbosity is at least `v`, as with
// klog's `-v` flag.
import { redactCredentials } from '../kube/redact.js';

/** Structured key/value pairs of one log line. */
export type KeyValues = Record<string, unknown>;

/** Where the controller logs, klog-style (`klog.V(v).InfoS`, `klog.ErrorS`). */
export interface Logger {
  /** An informational line at verbosity `v` (printed when the logger's verbosity is ≥ `v`). */
  info(v: number, msg: string, kv?: KeyValues): void;
  /** An error line, always printed, with `err` appended as the `err` key. */
  error(msg: string, err: unknown, kv?: KeyValues): void;
}

function fmtValue(v: unknown): string {
  if (v instanceof Error) return JSON.stringify(v.message);
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === undefined) return '<nil>';
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

function header(sev: 'I' | 'E', at: Date): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  const ts =
    `${p(at.getMonth() + 1)}${p(at.getDate())} ${p(at.getHours())}:${p(at.getMinutes())}:${p(at.getSeconds())}` +
    `.${p(at.getMilliseconds() * 1000, 6)}`;
  return `${sev}${ts} ${String(process.pid).padStart(7)} servicecidr]`;
}

/**
 * One klog text line (`I1121 05:11:00.123456   42 servicecidr] "msg" k="v"`), newline included,
 * with any credential a value holds redacted.
 */
export function formatLine(sev: 'I' | 'E', msg: string, kv: KeyValues = {}, at = new Date()): string {
  const pairs = Object.entries(kv).map(([k, v]) => ` ${k}=${fmtValue(v)}`);
  return `${header(sev, at)} ${redactCredentials(`${JSON.stringify(msg)}${pairs.join('')}`)}\n`;
}

/** A logger writing klog-style lines to `stream` (stderr by default). */
export function klogLogger(verbosity = 0, stream: { write(s: string): unknown } = process.stderr): Logger {
  return {
    info(v, msg, kv) {
      if (v <= verbosity) stream.write(formatLine('I', msg, kv));
    },
    error(msg, err, kv) {
      stream.write(formatLine('E', msg, { ...kv, err }));
    },
  };
}

/** A logger that drops everything. */
export const silentLogger: Logger = { info() {}, error() {} };
