// Runs the real metaopt-server as a child process on 127.0.0.1 with a free port (port 0),
// reading the port from its "listening on HOST:PORT" log line.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The server binary: $METAOPT_SERVER (ctest sets it), else the default build directory's. */
export function serverBinary() {
  const fromEnv = process.env.METAOPT_SERVER;
  if (fromEnv) return fromEnv;
  return new URL('../../../build/server/metaopt-server', import.meta.url).pathname;
}

/** A fresh temporary directory, removed by the returned cleanup function. */
export function tempDir(prefix = 'metaopt-node-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** A metaopt-server child. Not for concurrent use by several tests. */
export class ServerProcess {
  /**
   * @param {{db: string, models?: string, listen?: string, args?: string[]}} options
   */
  constructor(options) {
    this.options = options;
    this.child = null;
    this.logText = '';
    this.port = 0;
  }

  /** Starts the server and resolves to its port once it logs "listening on" (30 s at most). */
  start() {
    const { db, models = path.join(path.dirname(db), 'no-models'), listen = '127.0.0.1:0', args = [] } =
      this.options;
    this.logText = '';
    const child = spawn(
      serverBinary(),
      ['--listen', listen, '--db', db, '--models', models, '--models-poll-interval', '0', ...args],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    this.child = child;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`metaopt-server did not report its port within 30 s:\n${this.logText}`));
      }, 30_000);
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (chunk) => {
        this.logText += chunk;
        const match = /listening on [0-9.]+:([0-9]+)/.exec(this.logText);
        if (match && this.port === 0) {
          this.port = Number(match[1]);
          clearTimeout(timer);
          resolve(this.port);
        }
      });
      child.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.on('exit', (code, signal) => {
        clearTimeout(timer);
        if (this.port === 0) reject(new Error(`metaopt-server exited early (${code ?? signal}):\n${this.logText}`));
      });
    });
  }

  /** "127.0.0.1:PORT". */
  get address() {
    return `127.0.0.1:${this.port}`;
  }

  /** Sends `signal` and waits for the child to exit. */
  async stop(signal = 'SIGTERM') {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await exited;
    this.child = null;
    this.port = 0;
  }
}
