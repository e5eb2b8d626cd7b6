// Integration tests of larder-server with real Node.js clients from npm: ioredis, node-redis
// (RESP3) and valkey-glide. Each server is started on a free port with a temp data directory,
// and killed (and the directory removed) in after() hooks, also when a test fails.
// Run: LARDER_SERVER=build/bin/larder-server node --test   (or ./run in this folder)
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';

import { Redis } from 'ioredis';
import { createClient, RESP_TYPES } from 'redis';
import { Batch, Decoder, GlideClient, Logger, TimeUnit } from '@valkey/valkey-glide';

import { HOST, startServer, stopServer, within } from './servers.mjs';

const PASSWORD = 'secret';
const SMALL = randomBytes(1024);
const BIG = randomBytes(16 * 1024 * 1024);

let srv; // no password
let authSrv; // --requirepass secret
before(async () => {
  srv = await startServer();
  authSrv = await startServer(['--requirepass', PASSWORD]);
});
after(async () => {
  await stopServer(srv);
  await stopServer(authSrv);
});

const keys = (prefix, n) => Array.from({ length: n }, (_, i) => `${prefix}:${i}`);

// --- ioredis ---
function ioredis(port, opts = {}) {
  const r = new Redis({ host: HOST, port, lazyConnect: true, retryStrategy: () => null,
    maxRetriesPerRequest: 0, enableOfflineQueue: false, ...opts });
  r.on('error', () => {}); // surfaced through the rejected promises instead
  return r;
}

describe('ioredis', () => {
  let r;
  before(async () => { r = ioredis(srv.port); await r.connect(); });
  after(() => r?.disconnect());

  test('connects with RESP3 (HELLO 3)', async () => {
    assert.equal(await r.ping(), 'PONG');
    const hello = await r.call('HELLO', '3');
    const flat = Array.isArray(hello) ? hello : Object.entries(hello).flat();
    assert.equal(flat[flat.indexOf('proto') + 1], 3);
  });

  test('binary SET/GET 1 KiB and 16 MiB', async () => {
    assert.equal(await r.set('io:small', SMALL), 'OK');
    assert.ok(SMALL.equals(await r.getBuffer('io:small')));
    assert.equal(await r.set('io:big', BIG), 'OK');
    const got = await r.getBuffer('io:big');
    assert.equal(got.length, BIG.length);
    assert.ok(BIG.equals(got));
  });

  test('SET EX then TTL', async () => {
    assert.equal(await r.set('io:ex', 'v', 'EX', 100), 'OK');
    const ttl = await r.ttl('io:ex');
    assert.ok(ttl > 90 && ttl <= 100, `ttl ${ttl}`);
    assert.equal(await r.ttl('io:missing'), -2);
  });

  test('EXISTS, DEL, MGET, missing GET', async () => {
    await r.mset('io:a', '1', 'io:b', '2');
    assert.equal(await r.exists('io:a', 'io:b', 'io:nope', 'io:a'), 3);
    assert.deepEqual(await r.mget('io:a', 'io:nope', 'io:b'), ['1', null, '2']);
    assert.equal(await r.del('io:a', 'io:nope'), 1);
    assert.equal(await r.get('io:a'), null);
    assert.equal(await r.getBuffer('io:never'), null);
  });

  test('pipeline of 1000 SETs', async () => {
    const ks = keys('io:pl', 1000);
    const p = r.pipeline();
    ks.forEach((k, i) => p.set(k, `v${i}`));
    const res = await p.exec();
    assert.equal(res.length, 1000);
    for (const [err, val] of res) { assert.equal(err, null); assert.equal(val, 'OK'); }
    const vals = await r.mget(...ks);
    assert.deepEqual(vals, ks.map((_, i) => `v${i}`));
  });

  test('MULTI/EXEC', async () => {
    const res = await r.multi().set('io:tx', 'x').get('io:tx').del('io:tx').exec();
    assert.deepEqual(res, [[null, 'OK'], [null, 'x'], [null, 1]]);
  });

  test('LARDER.PREFIX via call()', async () => {
    await r.mset('io:p1', 'a', 'io:p2', 'b');
    assert.equal(await r.call('LARDER.PREFIX', 'io:p1', 'io:p2', 'io:p3', 'io:p1'), 2);
    assert.equal(await r.call('LARDER.PREFIX', 'io:p3', 'io:p1'), 0);
  });

  test('RESP2 connection (protocol: 2)', async () => {
    const r2 = ioredis(srv.port, { protocol: 2 });
    try {
      await r2.connect();
      assert.equal(await r2.set('io:r2', SMALL), 'OK');
      assert.ok(SMALL.equals(await r2.getBuffer('io:r2')));
      assert.equal(await r2.get('io:r2:missing'), null);
    } finally { r2.disconnect(); }
  });

  test('AUTH: right password works, wrong and missing are rejected', async () => {
    const ok = ioredis(authSrv.port, { password: PASSWORD });
    try {
      await ok.connect();
      assert.equal(await ok.set('io:auth', 'v'), 'OK');
      assert.equal(await ok.get('io:auth'), 'v');
      await assert.rejects(ok.auth('wrong'), /WRONGPASS|invalid/i);
      assert.equal(await ok.auth(PASSWORD), 'OK');
    } finally { ok.disconnect(); }

    // A rejected HELLO 3 AUTH closes the connection (retryStrategy: null); the server's
    // WRONGPASS reply arrives as the 'error' event.
    const bad = ioredis(authSrv.port, { password: 'wrong' });
    const errors = [];
    bad.on('error', (e) => errors.push(e.message));
    try {
      await assert.rejects(within(10000, bad.connect(), 'ioredis wrong password'));
      assert.match(errors.join('\n'), /^WRONGPASS /m);
    } finally { bad.disconnect(); }

    // No password: as with Redis, HELLO 3 (ioredis' default) and INFO (its ready check) get
    // NOAUTH, so connect with RESP2 and no ready check, then AUTH by hand.
    const none = ioredis(authSrv.port, { protocol: 2, enableReadyCheck: false });
    try {
      await none.connect();
      await assert.rejects(none.get('io:auth'), /NOAUTH/);
      await assert.rejects(none.auth('wrong'), /WRONGPASS|invalid/i);
      assert.equal(await none.auth(PASSWORD), 'OK');
      assert.equal(await none.get('io:auth'), 'v');
    } finally { none.disconnect(); }
  });
});

// --- node-redis (RESP3) ---
async function nodeRedis(port, opts = {}) {
  const c = createClient({ RESP: 3, socket: { host: HOST, port, reconnectStrategy: false },
    ...opts });
  c.on('error', () => {}); // surfaced through the rejected promises instead
  await within(10000, c.connect(), 'node-redis connect');
  return c;
}

describe('node-redis (RESP3)', () => {
  let c;
  let cb; // same connection, bulk strings as Buffers
  before(async () => {
    c = await nodeRedis(srv.port);
    cb = c.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
  });
  after(async () => { if (c?.isOpen) c.destroy(); });

  test('binary SET/GET 1 KiB and 16 MiB', async () => {
    assert.equal(await c.set('nr:small', SMALL), 'OK');
    assert.ok(SMALL.equals(await cb.get('nr:small')));
    assert.equal(await c.set('nr:big', BIG), 'OK');
    const got = await cb.get('nr:big');
    assert.equal(got.length, BIG.length);
    assert.ok(BIG.equals(got));
  });

  test('SET EX then TTL', async () => {
    assert.equal(await c.set('nr:ex', 'v', { EX: 100 }), 'OK');
    const ttl = await c.ttl('nr:ex');
    assert.ok(ttl > 90 && ttl <= 100, `ttl ${ttl}`);
    assert.equal(await c.ttl('nr:missing'), -2);
  });

  test('EXISTS, DEL, MGET, missing GET', async () => {
    await c.mSet({ 'nr:a': '1', 'nr:b': '2' });
    assert.equal(await c.exists(['nr:a', 'nr:b', 'nr:nope', 'nr:a']), 3);
    assert.deepEqual(await c.mGet(['nr:a', 'nr:nope', 'nr:b']), ['1', null, '2']);
    assert.equal(await c.del(['nr:a', 'nr:nope']), 1);
    assert.equal(await c.get('nr:a'), null);
    assert.equal(await cb.get('nr:never'), null);
  });

  test('1000 SETs batched without MULTI (auto-pipelined)', async () => {
    const ks = keys('nr:pl', 1000);
    const res = await Promise.all(ks.map((k, i) => c.set(k, `v${i}`)));
    assert.deepEqual(res, ks.map(() => 'OK'));
    assert.deepEqual(await c.mGet(ks), ks.map((_, i) => `v${i}`));
    const res2 = await ks.reduce((m, k) => m.get(k), c.multi()).execAsPipeline();
    assert.deepEqual(res2, ks.map((_, i) => `v${i}`));
  });

  test('MULTI/EXEC', async () => {
    const res = await c.multi().set('nr:tx', 'x').get('nr:tx').del('nr:tx').exec();
    assert.deepEqual(res, ['OK', 'x', 1]);
  });

  test('LARDER.PREFIX via sendCommand()', async () => {
    await c.mSet({ 'nr:p1': 'a', 'nr:p2': 'b' });
    assert.equal(await c.sendCommand(['LARDER.PREFIX', 'nr:p1', 'nr:p2', 'nr:p3', 'nr:p1']), 2);
    assert.equal(await c.sendCommand(['LARDER.PREFIX', 'nr:p3']), 0);
  });

  test('client-side caching: hits from the cache, invalidated by another client', async () => {
    const cached = await nodeRedis(srv.port, { clientSideCache: { ttl: 0, maxEntries: 0 } });
    const writer = await nodeRedis(srv.port);
    const cache = cached.clientSideCache;
    const dropped = async (what) => {
      const deadline = Date.now() + 10000;
      while (cache.size() !== 0) {
        assert.ok(Date.now() < deadline, `no invalidation ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    };
    try {
      await writer.set('nr:csc', 'v1');
      assert.equal(await cached.get('nr:csc'), 'v1');
      assert.equal(await cached.get('nr:csc'), 'v1');
      assert.equal(cache.stats().hitCount, 1, 'the second GET is served by the cache');
      await writer.set('nr:csc', 'v2');
      await dropped('after a SET');
      assert.equal(await cached.get('nr:csc'), 'v2');
      // Reads racing writes: once the writes are done and their invalidation has arrived, the
      // cached client must read the last value, never one it kept from before.
      await writer.set('nr:csc:n', '0');
      let written = false;
      const writes = (async () => {
        for (let i = 0; i < 300; i++) await writer.incr('nr:csc:n');
        written = true;
      })();
      while (!written) {
        await cached.get('nr:csc:n');
        await new Promise((resolve) => setImmediate(resolve)); // a hit never waits for I/O
      }
      await writes;
      await cached.ping(); // the last INCR's invalidation came before this reply
      assert.equal(await cached.get('nr:csc:n'), '300');
      await writer.flushAll();
      await dropped('after FLUSHALL');
    } finally {
      cached.destroy();
      writer.destroy();
    }
  });

  test('HELLO reports proto 3', async () => {
    const hello = await c.sendCommand(['HELLO', '3']);
    const proto = hello instanceof Map ? hello.get('proto') : hello.proto;
    assert.equal(proto, 3);
  });

  test('AUTH: right password works, wrong and missing are rejected', async () => {
    const ok = await nodeRedis(authSrv.port, { password: PASSWORD });
    try {
      assert.equal(await ok.set('nr:auth', 'v'), 'OK');
      assert.equal(await ok.get('nr:auth'), 'v');
      await assert.rejects(ok.auth({ password: 'wrong' }), /WRONGPASS|invalid/i);
      assert.equal(await ok.auth({ password: PASSWORD }), 'OK');
    } finally { ok.destroy(); }

    await assert.rejects(nodeRedis(authSrv.port, { password: 'wrong' }), /WRONGPASS|invalid/i);

    // No password: HELLO 3 is refused with NOAUTH (as by Redis 7), so connect() fails;
    // without RESP the client sends no HELLO and can AUTH later.
    await assert.rejects(nodeRedis(authSrv.port), { message: /^NOAUTH HELLO must be called/ });
    const none = await nodeRedis(authSrv.port, { RESP: undefined });
    try {
      await assert.rejects(none.get('nr:auth'), /NOAUTH/);
      assert.equal(await none.auth({ password: PASSWORD }), 'OK');
      assert.equal(await none.get('nr:auth'), 'v');
    } finally { none.destroy(); }
  });
});

// --- valkey-glide (HELLO 3, CLIENT SETINFO and INFO REPLICATION are sent by the client) ---
function glide(port, credentials) {
  return within(20000, GlideClient.createClient({ addresses: [{ host: HOST, port }],
    requestTimeout: 20000, ...(credentials ? { credentials } : {}) }), 'glide connect');
}

describe('valkey-glide', () => {
  let g;
  before(async () => { g = await glide(srv.port); });
  after(() => g?.close());

  test('binary SET/GET 1 KiB and 16 MiB', async () => {
    assert.equal(await g.set('gl:small', SMALL), 'OK');
    const small = await g.get('gl:small', { decoder: Decoder.Bytes });
    assert.ok(Buffer.isBuffer(small));
    assert.ok(SMALL.equals(small));
    assert.equal(await g.set('gl:big', BIG), 'OK');
    const got = await g.get('gl:big', { decoder: Decoder.Bytes });
    assert.equal(got.length, BIG.length);
    assert.ok(BIG.equals(got));
  });

  test('SET EX then TTL', async () => {
    assert.equal(await g.set('gl:ex', 'v', { expiry: { type: TimeUnit.Seconds, count: 100 } }), 'OK');
    const ttl = await g.ttl('gl:ex');
    assert.ok(ttl > 90 && ttl <= 100, `ttl ${ttl}`);
    assert.equal(await g.ttl('gl:missing'), -2);
  });

  test('EXISTS, DEL, MGET, missing GET', async () => {
    assert.equal(await g.mset({ 'gl:a': '1', 'gl:b': '2' }), 'OK');
    assert.equal(await g.exists(['gl:a', 'gl:b', 'gl:nope', 'gl:a']), 3);
    assert.deepEqual(await g.mget(['gl:a', 'gl:nope', 'gl:b']), ['1', null, '2']);
    assert.equal(await g.del(['gl:a', 'gl:nope']), 1);
    assert.equal(await g.get('gl:a'), null);
    assert.equal(await g.get('gl:never', { decoder: Decoder.Bytes }), null);
  });

  test('pipeline (non-atomic Batch) of 1000 SETs', async () => {
    const ks = keys('gl:pl', 1000);
    const b = new Batch(false);
    ks.forEach((k, i) => b.set(k, `v${i}`));
    const res = await g.exec(b, true);
    assert.deepEqual(res, ks.map(() => 'OK'));
    assert.deepEqual(await g.mget(ks), ks.map((_, i) => `v${i}`));
  });

  test('MULTI/EXEC (atomic Batch)', async () => {
    const b = new Batch(true).set('gl:tx', 'x').get('gl:tx').del(['gl:tx']);
    assert.deepEqual(await g.exec(b, true), ['OK', 'x', 1]);
  });

  test('LARDER.PREFIX via customCommand()', async () => {
    await g.mset({ 'gl:p1': 'a', 'gl:p2': 'b' });
    assert.equal(await g.customCommand(['LARDER.PREFIX', 'gl:p1', 'gl:p2', 'gl:p3', 'gl:p1']), 2);
    assert.equal(await g.customCommand(['LARDER.PREFIX', 'gl:p3']), 0);
  });

  test('INFO REPLICATION reports role:master', async () => {
    const info = await g.info();
    assert.match(String(info), /role:master/);
  });

  test('AUTH: right password works, wrong is rejected', async () => {
    const ok = await glide(authSrv.port, { password: PASSWORD });
    try {
      assert.equal(await ok.set('gl:auth', 'v'), 'OK');
      assert.equal(await ok.get('gl:auth'), 'v');
      await assert.rejects(ok.customCommand(['AUTH', 'wrong']), /WRONGPASS|invalid/i);
      assert.equal(await ok.customCommand(['AUTH', PASSWORD]), 'OK');
    } finally { ok.close(); }
    Logger.setLoggerConfig('off'); // the expected WRONGPASS would be logged as an ERROR
    try {
      await assert.rejects(glide(authSrv.port, { password: 'wrong' }), /WRONGPASS/);
    } finally { Logger.setLoggerConfig('warn'); }
  });
});
