// Formatting of proto3 JSON values for display.

export const TRIAL_STATES = ['ACTIVE', 'COMPLETED', 'FAILED', 'INFEASIBLE', 'ABANDONED', 'STALE'];

// "TRIAL_STATE_FAILED" -> "FAILED".
export function shortEnum(value, prefix) {
  if (!value) return '';
  return value.startsWith(prefix) ? value.slice(prefix.length) : value;
}

export function trialState(trial) {
  return shortEnum(trial.state, 'TRIAL_STATE_');
}

export function kindOf(study) {
  return shortEnum(study.spec?.algorithm?.kind, 'ALGORITHM_KIND_').toLowerCase() || 'unspecified';
}

export function goalOf(study) {
  return study.spec?.objective?.goal === 'GOAL_MAXIMIZE' ? 'maximize' : 'minimize';
}

export function number(value) {
  if (value === undefined || value === null || value === '') return '';
  const x = Number(value);
  if (!Number.isFinite(x)) return String(value);
  if (x !== 0 && (Math.abs(x) >= 1e6 || Math.abs(x) < 1e-4)) return x.toExponential(4);
  return String(Number(x.toPrecision(6)));
}

export function time(value) {
  if (!value) return '';
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return value;
  return date.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

// "scaler: standard · estimator: svm(C=1.2, kernel=rbf)".
export function configuration(config) {
  return (config?.assignments ?? [])
    .map((a) => {
      const parameters = Object.entries(a.parameters ?? {})
        .sort(([x], [y]) => x.localeCompare(y))
        .map(([name, v]) => `${name}=${v.category ?? number(v.number ?? 0)}`);
      const algorithm = a.algorithm ?? '';
      const body = parameters.length > 0 ? `${algorithm}(${parameters.join(', ')})` : algorithm;
      return a.stage ? `${a.stage}: ${body}` : body;
    })
    .join(' · ');
}

// Where a trial came from: the engine's metadata ("source" such as deadline-fallback or
// external, else the policy that proposed it).
export function source(trial) {
  const metadata = trial.metadata ?? {};
  return metadata.source ?? metadata.policy ?? '';
}
