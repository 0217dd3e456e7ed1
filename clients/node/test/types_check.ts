// Compiled (not run) by `tsc -p test/tsconfig.json`: the declarations in src/index.d.ts describe
// the API the README and the example use, and reject misuse (the @ts-expect-error lines).

import { Client, MetaoptError, Status, algorithms, parameters, toDate } from '../src/index.js';
import type { Outcome, StudyInfo, StudySpec, Trial } from '../src/index.js';

export async function typed(): Promise<number> {
  const client = new Client({ target: 'localhost:50051', timeoutMs: 1000, tls: { rootCerts: 'ca.pem' } });
  const spec: StudySpec = {
    search_space: { stages: [{ name: 'f', algorithms: [{ name: 'f', parameters: [{ name: 'x', float_domain: { low: 0, high: 1 } }] }] }] },
    objective: { name: 'loss', goal: 'GOAL_MINIMIZE' },
    algorithm: { kind: 'ALGORITHM_KIND_GP' },
    seed: 7,
  };
  const study = await client.createStudy('s', spec, { clientId: 'worker-1' });
  const created: boolean = study.created;
  const trials: Trial[] = await study.suggest(2);
  const id: string = trials[0].id;
  const x = parameters(trials[0]).x;
  const stage: string = algorithms(trials[0]).f;
  const outcomes: Outcome[] = [1, { value: 1, metrics: { t: 2 } }, { failed: 'oom' }, { infeasible: 'no' }];
  const done: Trial = await study.observe(trials[0], outcomes[0]);
  await study.observe(BigInt(id), { failed: 'oom' });
  const info: StudyInfo = await study.get();
  const when: Date | undefined = toDate(info.createTime);
  const page = await study.listTrials({ state: 'completed', pageSize: 10 });
  const tuned = await study.fineTune({ steps: 10, scope: 'full' });
  await study.heartbeat([done, '1']);
  const stop: boolean = (await study.report(trials[1], 3, 0.5, { metrics: { t: 1 }, stopReason: 'plateau' })).shouldStop;
  await client.reportIntermediate('s', trials[1].id, 4, 0.4, undefined, { stopReason: 'budget' });
  try {
    await client.getStudy('missing');
  } catch (error) {
    if (error instanceof MetaoptError && error.code === Status.NOT_FOUND) return error.details.length;
  }
  // @ts-expect-error: an unknown client option
  new Client({ tragte: 'x' });
  // @ts-expect-error: suggest takes a count, not a string
  await study.suggest('2');
  // @ts-expect-error: metrics, not metric
  await study.observe(done, { metric: { t: 1 } });
  const several = await client.createStudy('mo', {
    ...spec,
    objective: undefined,
    objectives: [['accuracy', 'maximize'], { name: 'fit_seconds', goal: 'GOAL_MINIMIZE', reference: 60 }],
    constraints: [['memory_mb', '<=', 300]],
  });
  const [mo] = await several.suggest();
  const feasible: boolean | undefined = (await several.observe(mo, { metrics: { accuracy: 0.9, fit_seconds: 2 } })).feasible;
  const front = await several.paretoFront();
  const hypervolume: number | undefined = front.summary.hypervolume;
  const frontPage = await several.getParetoFront({ pageSize: 2 });
  // @ts-expect-error: a constraint's sense is "<=" or ">="
  const badConstraint: StudySpec = { constraints: [['m', '<', 1]] };
  // @ts-expect-error: goal is an enum name
  const bad: StudySpec = { objective: { goal: 'MINIMIZE' } };
  // @ts-expect-error: stopReason is a string
  await study.report(done, 1, 0.5, { stopReason: true });
  // @ts-expect-error: scope is kernel or full
  await study.fineTune({ scope: 'everything' });
  client.close();
  return [created, x, stage, stop, when, page.nextPageToken, tuned.stepsRun, bad, feasible, hypervolume,
    frontPage.nextPageToken, badConstraint].length;
}
