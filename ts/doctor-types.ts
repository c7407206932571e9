// The shape of a `kubenode doctor` report. A leaf module: the doctor and the subsystems'
// sections import it, and nothing here imports them back.

/** `ok`: usable; `warn`: present but limited or off; `missing`: absent or unreadable. */
export type CheckStatus = 'ok' | 'warn' | 'missing';

/** One thing the doctor looked at. */
export interface DoctorCheck {
  /** What was checked (e.g. `max_user_namespaces`). */
  name: string;
  /** The verdict. */
  status: CheckStatus;
  /** What was found; null when it could not be read. */
  value: string | number | boolean | null;
  /** Why the status is not `ok`, or extra context. */
  detail?: string;
}

/** The checks of one subsystem or area. */
export interface DoctorSection {
  /** Section title (e.g. `platform`, `binding`, `user namespaces`). */
  section: string;
  /** The checks, in report order. */
  checks: DoctorCheck[];
}

/** What `collect` found. */
export interface DoctorReport {
  /** Every section, in report order. */
  sections: DoctorSection[];
}
