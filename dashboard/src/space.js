// The axes of a study's search space, as the plots draw them, and each trial's value on each.
//
// One axis per stage with more than one algorithm (categorical: which algorithm the trial
// chose) and one per parameter of every algorithm (numeric, log-scaled when its domain is
// `log`, or categorical). A stage's parameters are conditional on its algorithm: a trial that
// chose another algorithm has no value on them (valueOn returns undefined: "absent").

// Axis: {key, label, stage, algorithm?, parameter?, kind: 'algorithm'|'numeric'|'categorical',
//        categories?: string[], low?, high?, log?, integer?}
export function axesOf(spec) {
  const axes = [];
  for (const stage of spec?.searchSpace?.stages ?? []) {
    const algorithms = stage.algorithms ?? [];
    if (algorithms.length > 1) {
      axes.push({
        key: `${stage.name}`,
        label: `${stage.name}`,
        stage: stage.name,
        kind: 'algorithm',
        categories: algorithms.map((a) => a.name),
      });
    }
    for (const algorithm of algorithms) {
      for (const parameter of algorithm.parameters ?? []) {
        const axis = {
          key: `${stage.name}/${algorithm.name}/${parameter.name}`,
          // The algorithm names the parameter unless the stage has only one.
          label: algorithms.length > 1 ? `${algorithm.name}.${parameter.name}` : parameter.name,
          stage: stage.name,
          algorithm: algorithm.name,
          parameter: parameter.name,
          conditional: algorithms.length > 1,
        };
        if (parameter.categoricalDomain) {
          axis.kind = 'categorical';
          axis.categories = [...(parameter.categoricalDomain.values ?? [])];
        } else {
          const domain = parameter.floatDomain ?? parameter.intDomain ?? {};
          axis.kind = 'numeric';
          axis.integer = Boolean(parameter.intDomain);
          axis.low = Number(domain.low ?? 0);
          axis.high = Number(domain.high ?? 0);
          axis.log = Boolean(domain.log) && axis.low > 0;
        }
        axes.push(axis);
      }
    }
  }
  return axes;
}

// The assignment of `trial` to the axis's stage (matched by name; a configuration of a
// one-stage space may leave the stage out).
function assignmentOf(trial, axis, stageCount) {
  const assignments = trial.configuration?.assignments ?? [];
  return assignments.find((a) => a.stage === axis.stage) ??
    (stageCount === 1 && assignments.length === 1 && !assignments[0].stage ? assignments[0] : undefined);
}

// The algorithm a stage's assignment chose (omitted when the stage has one).
function algorithmOf(assignment, spec, stageName) {
  if (assignment?.algorithm) return assignment.algorithm;
  const stage = (spec?.searchSpace?.stages ?? []).find((s) => s.name === stageName);
  return stage?.algorithms?.length === 1 ? stage.algorithms[0].name : undefined;
}

// A function (trial, axis) -> number | string | undefined for `spec`: the trial's value on the
// axis (a category's name, an algorithm's name, a number), undefined when absent.
export function valueReader(spec) {
  const stageCount = spec?.searchSpace?.stages?.length ?? 0;
  return (trial, axis) => {
    const assignment = assignmentOf(trial, axis, stageCount);
    if (!assignment) return undefined;
    const algorithm = algorithmOf(assignment, spec, axis.stage);
    if (axis.kind === 'algorithm') return algorithm;
    if (algorithm !== axis.algorithm) return undefined;
    const value = assignment.parameters?.[axis.parameter];
    if (value === undefined) return undefined;
    if (value.category !== undefined) return value.category;
    return Number(value.number ?? 0);
  };
}

// A scale of the axis onto [0, 1] (0 at the bottom); categorical values sit at the middles of
// equal bands. Values outside the domain (a spec changed since) are clamped.
export function scaleOf(axis) {
  if (axis.kind !== 'numeric') {
    const n = Math.max(1, axis.categories.length);
    const index = new Map(axis.categories.map((c, i) => [c, i]));
    return (v) => (index.has(v) ? (index.get(v) + 0.5) / n : 0);
  }
  const f = axis.log ? Math.log : (x) => x;
  const lo = f(axis.low);
  const hi = f(axis.high);
  const span = hi - lo;
  return (v) => {
    if (!(span > 0)) return 0.5;
    const x = (f(Math.max(axis.low, Math.min(axis.high, v))) - lo) / span;
    return Number.isFinite(x) ? x : 0;
  };
}
