// Server harness for the Node.js client tests: starts larder-server (LARDER_SERVER) or Debian's
// redis-server 7 (REDIS_SERVER, the reference) on a free port with a temp directory; stopServer
// kills it and removes the directory, and any server still alive dies with the test process.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, openSync, closeSync, readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const LARDER_SERVER = process.env.LARDER_SERVER ||
  path.resolve(HERE, '..', '..', '..', 'build', 'bin', 'larder-server');
export const REDIS_SERVER = process.env.REDIS_SERVER || '/usr/bin/redis-server';
export const HOST = '127.0.0.1';

const live = new Set(); // every started server, killed on process exit as a last resort
process.on('exit', () => { for (const s of live) s.proc.kill('SIGKILL'); });

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, HOST, () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function canConnect(port) {
  return new Promise((resolve) => {
    const sock = net.connect({ host: HOST, port }, () => { sock.destroy(); resolve(true); });
    sock.once('error', () => { sock.destroy(); resolve(false); });
  });
}

// The command line of each kind; `budget` is larder's max-disk-bytes or redis's maxmemory.
const COMMANDS = {
  larder: (port, dir, budget) => [LARDER_SERVER, ['--port', String(port), '--dir', path.join(dir, 'data'),
    '--unixsocket', '', '--max-disk-bytes', budget, '--memtable-bytes', '64mb']],
  redis: (port, dir, budget) => [REDIS_SERVER, ['--port', String(port), '--bind', HOST, '--save', '',
    '--appendonly', 'no', '--dir', dir, '--maxmemory', budget, '--maxmemory-policy', 'allkeys-lru']],
};

// Starts a server: kind 'larder' or 'redis', extra command-line arguments, budget ('256mb').
export async function startServer(extraArgs = [], { kind = 'larder', budget = '256mb' } = {}) {
  const tmp = mkdtempSync(path.join(os.tmpdir(), `larder-node-${kind}-`));
  const logPath = path.join(tmp, 'server.log');
  const s = { kind, tmp, logPath, port: 0, proc: null };
  try {
    s.port = await freePort();
    const [bin, args] = COMMANDS[kind](s.port, tmp, budget);
    const log = openSync(logPath, 'a');
    s.proc = spawn(bin, [...args, ...extraArgs], { stdio: ['ignore', log, log] });
    closeSync(log);
    live.add(s);
    let exited = null;
    s.proc.once('exit', (code, sig) => { exited = `code ${code} signal ${sig}`; });
    s.proc.once('error', (e) => { exited = String(e); });
    const deadline = Date.now() + 20000;
    while (Date.now() < deadline) {
      if (exited) throw new Error(`${bin} exited (${exited}): ${readLog(s)}`);
      if (await canConnect(s.port)) return s;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${bin} did not start: ${readLog(s)}`);
  } catch (e) {
    await stopServer(s);
    throw e;
  }
}

export function readLog(s) {
  try { return readFileSync(s.logPath, 'utf8'); } catch { return '(no log)'; }
}

export function isAlive(s) {
  return s.proc && s.proc.exitCode === null && s.proc.signalCode === null;
}

export async function stopServer(s) {
  if (!s) return;
  const p = s.proc;
  if (isAlive(s)) {
    const gone = new Promise((r) => p.once('exit', r));
    p.kill('SIGTERM');
    const t = setTimeout(() => p.kill('SIGKILL'), 10000);
    await gone;
    clearTimeout(t);
  }
  live.delete(s);
  rmSync(s.tmp, { recursive: true, force: true });
}

// Rejects if `promise` does not settle within ms (so a hanging client fails, not stalls).
export function within(ms, promise, what) {
  let t;
  const timeout = new Promise((_, rej) => {
    t = setTimeout(() => rej(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(t));
}
