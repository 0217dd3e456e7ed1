// Runs every grpcurl command of docs/grpcurl.md with `buf curl` (gRPC over reflection, like
// grpcurl) against a fresh metaopt-server on 127.0.0.1 port 0, and checks each response against
// the block that follows the command in the doc:
//   ```json   the response, abridged: every field shown must be there with that value; "…" matches
//             any value; arrays must have the length shown.
//   ```text   "ERROR:\n  Code: FailedPrecondition\n  Message: …" (grpcurl's error form): the call
//             fails with that code and message; or the lines that `list` prints.
// An HTML comment `<!-- doc-test: tokens OWNER:TOKEN -->` starts a new server with that tokens
// file for the commands after it.
//
//   METAOPT_SERVER=build/server/metaopt-server BUF=tools/node_modules/.bin/buf \
//     node --test tests/integration/grpcurl_doc_test.mjs

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';

import { ServerProcess, serverBinary, tempDir } from '../../clients/node/test/server_process.js';

const run = promisify(execFile);
const repoRoot = new URL('../../', import.meta.url).pathname;
const docPath = path.join(repoRoot, 'docs/grpcurl.md');
const buf = process.env.BUF || path.join(repoRoot, 'tools/node_modules/.bin/buf');
const docAddress = 'localhost:50051';

/**
 * The doc as sections (split at doc-test directives), each a list of steps
 * {line, command, expectLang, expect}.
 */
export function parseDoc(text) {
  const lines = text.split('\n');
  const sections = [{ tokens: null, steps: [] }];
  const blocks = [];
  for (let i = 0; i < lines.length; ++i) {
    const directive = /^<!-- doc-test: tokens (\S+:\S+) -->$/.exec(lines[i]);
    if (directive) {
      blocks.push({ directive: directive[1] });
      continue;
    }
    const fence = /^```(\w*)\s*$/.exec(lines[i]);
    if (!fence) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && lines[end] !== '```') ++end;
    if (end === lines.length) throw new Error(`docs/grpcurl.md:${i + 1}: unclosed code block`);
    blocks.push({ lang: fence[1], line: i + 1, body: lines.slice(start, end).join('\n') });
    i = end;
  }
  for (let b = 0; b < blocks.length; ++b) {
    const block = blocks[b];
    if (block.directive) {
      sections.push({ tokens: block.directive, steps: [] });
      continue;
    }
    if (block.lang !== 'sh' || !block.body.startsWith('grpcurl ')) continue;
    const next = blocks[b + 1];
    if (!next || next.directive || !['json', 'text'].includes(next.lang)) {
      throw new Error(`docs/grpcurl.md:${block.line}: a grpcurl command needs a json or text block after it`);
    }
    sections.at(-1).steps.push({ line: block.line, command: block.body, expectLang: next.lang, expect: next.body });
    ++b;
  }
  return sections;
}

/** Shell words of one command: single and double quotes, backslash-newline continuations. */
export function shellWords(command) {
  const words = [];
  let word = null;
  for (let i = 0; i < command.length; ++i) {
    const c = command[i];
    if (c === '\\' && command[i + 1] === '\n') {
      ++i;
    } else if (c === "'") {
      const close = command.indexOf("'", i + 1);
      if (close < 0) throw new Error(`unterminated ' in: ${command}`);
      word = (word ?? '') + command.slice(i + 1, close);
      i = close;
    } else if (c === '"') {
      let j = i + 1;
      let text = '';
      for (; j < command.length && command[j] !== '"'; ++j) {
        if (command[j] === '\\' && j + 1 < command.length) ++j;
        text += command[j];
      }
      if (j >= command.length) throw new Error(`unterminated " in: ${command}`);
      word = (word ?? '') + text;
      i = j;
    } else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else if ('|;&<>$`'.includes(c)) {
      throw new Error(`shell syntax ${c} is not supported by this test: ${command}`);
    } else {
      word = (word ?? '') + c;
    }
  }
  if (word !== null) words.push(word);
  return words;
}

/** A grpcurl command line as {headers, data, kind: 'call' | 'list', target}. */
export function parseGrpcurl(command) {
  const words = shellWords(command);
  assert.equal(words.shift(), 'grpcurl');
  const parsed = { headers: [], data: undefined, plaintext: false };
  while (words.length && words[0].startsWith('-')) {
    const flag = words.shift();
    if (flag === '-plaintext') parsed.plaintext = true;
    else if (flag === '-H') parsed.headers.push(words.shift());
    else if (flag === '-d') parsed.data = words.shift();
    else throw new Error(`grpcurl flag ${flag} is not supported by this test`);
  }
  assert.ok(parsed.plaintext, 'the test runs plaintext commands only');
  assert.equal(words.shift(), docAddress, `commands must address ${docAddress}`);
  if (words[0] === 'list') {
    assert.ok(words.length <= 2, `list takes at most one service: ${command}`);
    return { ...parsed, kind: 'list', target: words[1] };
  }
  assert.equal(words.length, 1, `expected one method after the address: ${command}`);
  assert.match(words[0], /^[\w.]+\/\w+$/, 'methods are written SERVICE/METHOD');
  return { ...parsed, kind: 'call', target: words[0] };
}

/** Runs buf curl; resolves to {code, stdout, stderr} (code 0 on success). */
async function bufCurl(args) {
  try {
    const { stdout, stderr } = await run(buf, ['curl', '--protocol', 'grpc', '--http2-prior-knowledge', ...args], {
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    if (typeof error.code !== 'number') throw error;
    return { code: error.code, stdout: error.stdout, stderr: error.stderr };
  }
}

/** `expected` (abridged, "…" wildcards) against `actual`, failing with the JSON path. */
export function matchJson(expected, actual, where = '$') {
  if (expected === '…') {
    assert.notEqual(actual, undefined, `${where}: missing`);
    return;
  }
  if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${where}: expected an array, got ${JSON.stringify(actual)}`);
    assert.equal(actual.length, expected.length, `${where}: length`);
    expected.forEach((item, i) => matchJson(item, actual[i], `${where}[${i}]`));
    return;
  }
  if (expected !== null && typeof expected === 'object') {
    assert.ok(actual !== null && typeof actual === 'object' && !Array.isArray(actual),
      `${where}: expected an object, got ${JSON.stringify(actual)}`);
    for (const [key, value] of Object.entries(expected)) matchJson(value, actual[key], `${where}.${key}`);
    return;
  }
  assert.deepEqual(actual, expected, `${where}: value`);
}

/** grpcurl's "FailedPrecondition" -> buf's "failed_precondition". */
function snakeCode(code) {
  return code.replace(/([a-z])([A-Z])/g, '$1_$2').toLowerCase();
}

async function runStep(step, address) {
  const call = parseGrpcurl(step.command);
  const headerArgs = call.headers.flatMap((h) => ['-H', h]);
  let result;
  if (call.kind === 'list') {
    const flag = call.target ? '--list-methods' : '--list-services';
    result = await bufCurl([...headerArgs, flag, `http://${address}`]);
  } else {
    const dataArgs = call.data === undefined ? [] : ['-d', call.data];
    result = await bufCurl([...headerArgs, ...dataArgs, `http://${address}/${call.target}`]);
  }
  const error = /^ERROR:\n\s+Code: (\w+)\n\s+Message: (.*)$/s.exec(step.expect);
  if (error) {
    assert.notEqual(result.code, 0, `expected ${error[1]}, but the call succeeded: ${result.stdout}`);
    const status = JSON.parse(result.stderr.slice(result.stderr.indexOf('{')));
    assert.equal(status.code, snakeCode(error[1]), `status code (message: ${status.message})`);
    assert.equal(status.message, error[2].trim());
    return;
  }
  assert.equal(result.code, 0, `buf curl failed (${result.code}): ${result.stderr}`);
  if (step.expectLang === 'json') {
    matchJson(JSON.parse(step.expect), JSON.parse(result.stdout));
    return;
  }
  let lines = result.stdout.split('\n').filter(Boolean);
  if (call.kind === 'list' && call.target) {
    // buf lists every service's methods as SERVICE/METHOD; grpcurl those of one as SERVICE.METHOD.
    lines = lines.filter((l) => l.startsWith(`${call.target}/`)).map((l) => l.replace('/', '.'));
  }
  assert.deepEqual(lines.sort(), step.expect.split('\n').filter(Boolean).sort());
}

const sections = parseDoc(fs.readFileSync(docPath, 'utf8'));

test('docs/grpcurl.md has a walkthrough to run', () => {
  const steps = sections.flatMap((s) => s.steps);
  assert.ok(steps.length >= 10, `only ${steps.length} grpcurl commands found`);
  const methods = new Set(steps.map((s) => parseGrpcurl(s.command).target));
  for (const method of ['CreateStudy', 'Suggest', 'Observe', 'GetStudy', 'ListTrials', 'FineTune', 'Check']) {
    assert.ok([...methods].some((m) => m?.endsWith(`/${method}`)), `no ${method} in the walkthrough`);
  }
});

const { stdout: serverHelp } = await run(serverBinary(), ['--help']);

sections.forEach((section, index) => {
  const needsTokens = section.tokens !== null;
  const skip = needsTokens && !serverHelp.includes('--tokens') ? 'metaopt-server has no --tokens flag' : false;
  describe(needsTokens ? `server with --tokens (section ${index})` : 'server without tokens', { skip }, () => {
    const temp = tempDir('metaopt-grpcurl-doc-');
    let server;
    before(async () => {
      const args = [];
      if (needsTokens) {
        const tokens = path.join(temp.dir, 'tokens');
        fs.writeFileSync(tokens, `${section.tokens}\n`);
        args.push('--tokens', tokens);
      }
      server = new ServerProcess({ db: path.join(temp.dir, 'metaopt.db'), args });
      await server.start();
    });
    after(async () => {
      await server?.stop();
      temp.cleanup();
    });
    for (const step of section.steps) {
      const { kind, target } = parseGrpcurl(step.command);
      const name = kind === 'list' ? `list ${target ?? ''}`.trim() : target;
      test(`docs/grpcurl.md:${step.line}: ${name}`, () => runStep(step, server.address));
    }
  });
});
