// Server harness for the Node.js client tests: starts larder-server (LARDER_SERVER) or Debian's
// redis-server 7 (REDIS_SERVER, the reference) on a free port with a temp directory; stopServer
// kills it and removes the directory, and any server still alive dies with the test process.
import { spawn } from 'node:child_process';
import {
  mkdtempSync, rmSync, openSync, closeSync, readFileSync, readdirSync, readlinkSync,
} from 'node:fs';
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

// Where freePort looks: the 16,384 ports just below the kernel's range for automatic local
// ports. A port from listen(0) comes from that range, which every outgoing connection also
// draws from, so a test's own clients could take it before its server binds it; below the
// range nothing takes a port unless it asks for that port. (tests/server/server_harness.py
// picks its ports the same way.)
function portPool() {
  try {
    const range = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8');
    const low = Number(range.split(/\s+/)[0]);
    const first = Math.max(1024, low - 16384);
    if (low - first >= 1024) return [first, low];
  } catch { /* no /proc: let the kernel pick */ }
  return null;
}

const givenPorts = new Set(); // never the same port for two servers of this process

function canListen(port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host: HOST, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

// A loopback port free at the time of the call. Only that: the server binds it later, and a
// test running beside this one may take it first (startServer moves on).
async function freePort() {
  const pool = portPool();
  for (let i = 0; pool && i < 100; i++) {
    const port = pool[0] + Math.floor(Math.random() * (pool[1] - pool[0]));
    if (!givenPorts.has(port) && await canListen(port)) {
      givenPorts.add(port);
      return port;
    }
  }
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, HOST, () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// The inodes of the TCP sockets listening on `port`, from /proc/net.
function listeningInodes(port) {
  const inodes = new Set();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text;
    try { text = readFileSync(table, 'utf8'); } catch { continue; }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length > 9 && f[3] === '0A' && parseInt(f[1].split(':').pop(), 16) === port) {
        inodes.add(`socket:[${f[9]}]`);
      }
    }
  }
  return inodes;
}

// Whether process `pid` itself listens on TCP `port` (a connection could reach another
// process that took the port).
function listensOn(pid, port) {
  const wanted = listeningInodes(port);
  if (wanted.size === 0) return false;
  let fds;
  try { fds = readdirSync(`/proc/${pid}/fd`); } catch { return false; }
  return fds.some((fd) => {
    try { return wanted.has(readlinkSync(`/proc/${pid}/fd/${fd}`)); } catch { return false; }
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
// Resolves once the process itself listens on its port; a start whose port another process
// took first moves to a new port, up to 5 times.
export async function startServer(extraArgs = [], { kind = 'larder', budget = '256mb' } = {}) {
  const tmp = mkdtempSync(path.join(os.tmpdir(), `larder-node-${kind}-`));
  const logPath = path.join(tmp, 'server.log');
  const s = { kind, tmp, logPath, port: 0, proc: null };
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      s.port = await freePort();
      if (await launch(s, extraArgs, budget)) return s;
    }
    throw new Error(`no free port after 5 attempts: ${readLog(s)}`);
  } catch (e) {
    await stopServer(s);
    throw e;
  }
}

// Runs s's server on s.port: true once it listens there, false if it exited because the
// port was in use (its log then cleared for the next attempt); throws otherwise.
async function launch(s, extraArgs, budget) {
  const [bin, args] = COMMANDS[s.kind](s.port, s.tmp, budget);
  const log = openSync(s.logPath, 'w');
  s.proc = spawn(bin, [...args, ...extraArgs], { stdio: ['ignore', log, log] });
  closeSync(log);
  live.add(s);
  let exited = null;
  s.proc.once('exit', (code, sig) => { exited = `code ${code} signal ${sig}`; });
  s.proc.once('error', (e) => { exited = String(e); });
  const deadline = Date.now() + 20000;
  while (Date.now() < deadline) {
    if (exited) {
      if (readLog(s).includes('already in use')) return false;
      throw new Error(`${bin} exited (${exited}): ${readLog(s)}`);
    }
    if (listensOn(s.proc.pid, s.port)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${bin} did not start: ${readLog(s)}`);
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
