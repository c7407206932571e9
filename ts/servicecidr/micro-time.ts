// metav1.MicroTime on the wire: Go's RFC3339Micro layout in UTC ("2006-01-02T15:04:05.000000Z"),
// always six fractional digits, as the API server writes and client-go sends Lease times.
import { KubenodeRangeError } from '../errors.js';

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** `ms` (milliseconds since the epoch, fractions kept to the microsecond) as a MicroTime string. */
export function microTime(ms: number): string {
  const whole = Math.floor(ms);
  const d = new Date(whole);
  const year = d.getUTCFullYear();
  // Go's layout has a four-digit year; outside it the API server would refuse the value anyway.
  if (!Number.isFinite(ms) || year < 0 || year > 9999) {
    throw new KubenodeRangeError(`time ${ms} ms is outside the years 0000–9999 a MicroTime can hold`);
  }
  const micros = d.getUTCMilliseconds() * 1000 + Math.min(999, Math.floor((ms - whole) * 1000));
  return (
    `${pad(year, 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}` +
    `T${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}.${pad(micros, 6)}Z`
  );
}
