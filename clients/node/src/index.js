// metaopt: a Node.js client for metaopt.v1.OptimizerService (ask/tell optimization).
//
//   import { Client, parameters } from 'metaopt';
//   const client = new Client({ target: 'localhost:50051' });
//   const study = await client.createStudy('quadratic', spec);
//   const [trial] = await study.suggest();
//   await study.observe(trial, f(parameters(trial)));
//   client.close();

export { Client, Pruned, Study } from './client.js';
export { MetaoptError, Status, codeName } from './errors.js';
export { algorithms, parameters, toDate } from './configuration.js';
export { defaultProtoDir } from './messages.js';
