// Formatting of proto3 JSON values for display.

// The trial states this page knows, in the order it lists them. A state it does not know (one a
// newer server added) is shown by its name like any other: see statesOf.
export const TRIAL_STATES = ['ACTIVE', 'COMPLETED', 'FAILED', 'INFEASIBLE', 'STOPPED', 'ABANDONED', 'STALE'];

// The known states followed by any other state among `trials`, in order of first appearance.
export function statesOf(trials) {
  const states = [...TRIAL_STATES];
  for (const t of trials) {
    const state = trialState(t);
    if (state && !states.includes(state)) states.push(state);
  }
  return states;
}

// True while a trial may still change: it has no completion time (ACTIVE, STALE, and any
// unknown state not yet completed). COMPLETED, FAILED and INFEASIBLE trials never change again.
export function unsettled(trial) {
  return !trial.completeTime;
}

// "TRIAL_STATE_FAILED" -> "FAILED".
// An enum value a newer server knows and this page does not is still shown by its name; one the
// server itself does not know (proto3 JSON gives its number) as that number.
export function shortEnum(value, prefix) {
  if (value === undefined || value === null || value === '') return '';
  const name = String(value);
  return name.startsWith(prefix) ? name.slice(prefix.length) : name;
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
