// ask_tell: the ask/tell loop with the Node client.
//
// Creates (or reopens) a study over x1 in [-5, 10], x2 in [0, 15], asks for a batch of
// configurations (Suggest), evaluates the Branin function on each, tells the server the results
// (Observe), and prints the best trial. Branin's minimum is 0.397887.
//
//   node examples/ask_tell.mjs [--server localhost:50051] [--study-id branin-node] [--trials 20]
//                              [--batch 2] [--algorithm gp|random] [--token TOKEN]

import { parseArgs } from 'node:util';

import { Client, MetaoptError, parameters } from '../src/index.js';

const usage = `usage: node ask_tell.mjs [options]
Minimizes the Branin function with a metaopt study: ask (Suggest), evaluate, tell (Observe).

  --server HOST:PORT   the metaopt server (default: $METAOPT_SERVER or localhost:50051;
                       --target is the same)
  --study-id ID        the study, created or reopened (default: branin-node)
  --trials N           trials to evaluate (default: 20)
  --batch N            trials asked for at once (default: 2)
  --algorithm NAME     gp or random (default: gp)
  --token TOKEN        bearer token, for a server with --tokens
  -h, --help           this message`;

function branin(x1, x2) {
  const b = 5.1 / (4 * Math.PI ** 2);
  const c = 5 / Math.PI;
  const t = 1 / (8 * Math.PI);
  return (x2 - b * x1 ** 2 + c * x1 - 6) ** 2 + 10 * (1 - t) * Math.cos(x1) + 10;
}

let args;
try {
  ({ values: args } = parseArgs({
    options: {
      server: { type: 'string' },
      target: { type: 'string' },
      'study-id': { type: 'string', default: 'branin-node' },
      trials: { type: 'string', default: '20' },
      batch: { type: 'string', default: '2' },
      algorithm: { type: 'string', default: 'gp' },
      token: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  }));
} catch (err) {
  console.error(`ask_tell: ${err.message}\n\n${usage}`);
  process.exit(2);
}
if (args.help) {
  console.log(usage);
  process.exit(0);
}
args.target = args.server ?? args.target ?? process.env.METAOPT_SERVER ?? 'localhost:50051';
const trials = Number(args.trials);
const batch = Number(args.batch);
if (!Number.isInteger(trials) || trials < 1 || !Number.isInteger(batch) || batch < 1) {
  console.error('ask_tell: --trials and --batch must be positive integers');
  process.exit(2);
}
if (!['gp', 'random'].includes(args.algorithm)) {
  console.error('ask_tell: --algorithm must be gp or random');
  process.exit(2);
}

const spec = {
  search_space: {
    stages: [
      {
        name: 'branin',
        algorithms: [
          {
            name: 'branin',
            parameters: [
              { name: 'x1', float_domain: { low: -5, high: 10 } },
              { name: 'x2', float_domain: { low: 0, high: 15 } },
            ],
          },
        ],
      },
    ],
  },
  objective: { name: 'branin', goal: 'GOAL_MINIMIZE' },
  algorithm: { kind: `ALGORITHM_KIND_${args.algorithm.toUpperCase()}` },
  seed: 7,
};

const client = new Client({ target: args.target, token: args.token });
try {
  const study = await client.createStudy(args['study-id'], spec);
  const soFar = study.info.trialCount ?? 0;
  console.log(`${study.created ? 'created' : 'reopened'} study ${study.id} (${soFar} trials so far)`);
  let evaluated = 0;
  while (evaluated < trials) {
    const suggested = await study.suggest(Math.min(batch, trials - evaluated));
    if (suggested.length === 0) break;
    for (const trial of suggested) {
      const { x1, x2 } = parameters(trial);
      const value = branin(x1, x2);
      await study.observe(trial, value);
      console.log(`trial ${trial.id}: x1=${x1.toFixed(4)} x2=${x2.toFixed(4)} -> ${value.toFixed(6)}`);
      evaluated += 1;
    }
  }
  const { bestTrial } = await study.get();
  const best = parameters(bestTrial);
  const where = `x1=${best.x1.toFixed(4)} x2=${best.x2.toFixed(4)}`;
  console.log(`best: trial ${bestTrial.id} ${where} value=${bestTrial.value.toFixed(6)}`);
} catch (error) {
  if (!(error instanceof MetaoptError)) throw error;
  console.error(`ask_tell: ${error.message}`);
  process.exitCode = 1;
} finally {
  client.close();
}
