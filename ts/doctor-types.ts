// The shape of a `kubenode doctor` report. A leaf module: the doctor and the subsystems'
// sections import it, and nothing here imports them back.

export type CheckStatus = 'ok' | 'warn' | 'missing';

export interface DoctorCheck {
  name: string;
  status: CheckStatus;
  value: string | number | boolean | null;
  detail?: string;
}

export interface DoctorSection {
  section: string;
  checks: DoctorCheck[];
}

export interface DoctorReport {
  sections: DoctorSection[];
}
