// LMCache's `valkey://` path (ValkeyConnector over valkey-glide) against larder-server and
// against redis-server 7 in the same run. The glide client itself sends what LMCache's would:
// HELLO 3 (with AUTH when a password is set), CLIENT SETINFO, then INFO REPLICATION, where it
// requires role:master. Per chunk, one key: SET key value EX ttl, GET (a value of the wrong
// length is a miss), EXISTS; prefix lookups as one non-atomic Batch of EXISTS (LMCache PR 3955).
// Run: LARDER_SERVER=... REDIS_SERVER=/usr/bin/redis-server node --test lmcache_valkey.test.mjs
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';

import { Batch, Decoder, GlideClient, TimeUnit } from '@valkey/valkey-glide';

import { HOST, isAlive, startServer, stopServer, within } from './servers.mjs';

const MiB = 1024 * 1024;
const CHUNK = 8 * MiB;
const WORKERS = 8; // LMCache's num_workers default: one glide client per worker thread
const TTL = 86400;
const PASSWORD = 'lmcache-pw';
const BASE = randomBytes(CHUNK);
// Redis counts client buffers (8 clients x 8 MiB in flight) against maxmemory and would evict
// the first test's 8 chunks at 128 MiB, so it gets twice the budget. The pressure test writes
// the same 384 MiB to both: three times Larder's budget, 1.5 times Redis's, past both. (glide
// moves about 40 MB/s per process here, for either server: the sizes set this file's time.)
const BUDGET_MIB = { larder: 128, redis: 256 };
const PRESSURE_MIB = 3 * BUDGET_MIB.larder;

// A chunk's bytes: the key's digest in the first 32 bytes of a shared random body.
function chunk(key) {
  const v = Buffer.from(BASE);
  createHash('sha256').update(key).digest().copy(v, 0);
  return v;
}
const lmcacheKey = (i) => `meta-llama/Llama-3.1-8B-Instruct@1@0@${(0x51000 + i).toString(16)}@bfloat16`;

function glide(port) {
  return within(20000, GlideClient.createClient({ addresses: [{ host: HOST, port }],
    requestTimeout: 20000, credentials: { username: 'default', password: PASSWORD } }), 'glide connect');
}

// ValkeyConnector.get: GET into the chunk buffer; any other length is a miss.
async function lmcacheGet(g, key) {
  const v = await g.get(key, { decoder: Decoder.Bytes });
  return v !== null && v.length === CHUNK ? v : null;
}

for (const kind of ['larder', 'redis']) {
  describe(`valkey:// path on ${kind}`, () => {
    let srv;
    let clients = [];
    before(async () => {
      srv = await startServer(['--requirepass', PASSWORD], { kind, budget: `${BUDGET_MIB[kind]}mb` });
      clients = await Promise.all(Array.from({ length: WORKERS }, () => glide(srv.port)));
    });
    after(async () => {
      for (const c of clients) c.close();
      await stopServer(srv);
    });

    test('put, get, exists per chunk on 8 clients', async () => {
      await Promise.all(clients.map(async (g, w) => {
        const key = lmcacheKey(w);
        assert.equal(await g.set(key, chunk(key), { expiry: { type: TimeUnit.Seconds, count: TTL } }), 'OK');
        assert.equal(await g.exists([key]), 1);
        const got = await lmcacheGet(g, key);
        assert.ok(got && got.equals(chunk(key)), `${kind}: chunk ${w} read back wrong`);
        const ttl = await g.ttl(key);
        assert.ok(ttl > TTL - 60 && ttl <= TTL, `ttl ${ttl}`);
        assert.equal(await lmcacheGet(g, `${key}-missing`), null);
        assert.equal(await g.exists([`${key}-missing`]), 0);
      }));
    });

    test('prefix lookup as one non-atomic Batch of EXISTS', async () => {
      const g = clients[0];
      const ks = Array.from({ length: 64 }, (_, i) => `prefix:${i}`);
      const w = new Batch(false);
      ks.slice(0, 40).forEach((k) => w.set(k, 'm'));
      await g.exec(w, true);
      const b = new Batch(false);
      ks.forEach((k) => b.exists([k]));
      const res = await g.exec(b, true);
      assert.equal(res.findIndex((x) => x === 0), 40);
    });

    test(`${PRESSURE_MIB} MiB past the budget: every reply OK, reads exact or a miss`, async () => {
      const total = (PRESSURE_MIB * MiB) / CHUNK; // 48 chunks
      const perWorker = total / WORKERS;
      await Promise.all(clients.map(async (g, w) => {
        for (let j = 0; j < perWorker; j++) {
          const key = lmcacheKey(1000 + w * perWorker + j);
          assert.equal(await g.set(key, chunk(key), { expiry: { type: TimeUnit.Seconds, count: TTL } }), 'OK');
        }
      }));
      let hits = 0;
      for (let i = 0; i < total; i++) {
        const key = lmcacheKey(1000 + i);
        const v = await clients[i % WORKERS].get(key, { decoder: Decoder.Bytes });
        if (v !== null) {
          assert.ok(v.equals(chunk(key)), `${kind}: ${key} read back wrong bytes`);
          hits++;
        }
      }
      console.log(`# ${kind}: ${total} x ${CHUNK / MiB} MiB through glide into ${BUDGET_MIB[kind]} MiB, ${hits} readable`);
      assert.ok(hits > 0 && hits < total, `${hits} of ${total} readable`);
      assert.ok(isAlive(srv));
    });
  });
}
