// Three larder-server nodes in cluster mode, the topology pushed as kvrocks-controller pushes
// it (CLUSTERX SETNODEID, then CLUSTERX SETNODES "<id> <host> <port> master - <range>\n..." 1),
// then used unchanged by ioredis's Cluster and valkey-glide's GlideClusterClient: multi-MiB
// values byte-exact, keys on every node, MOVED followed, CROSSSLOT within hash tags avoided;
// then LMCache's `valkey://` connector with `valkey_mode: cluster`, step by step.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';

import { Cluster, Redis } from 'ioredis';
import { ClusterBatch, Decoder, GlideClusterClient, TimeUnit } from '@valkey/valkey-glide';

import { HOST, startServer, stopServer } from './servers.mjs';

const MiB = 1 << 20;
const nodes = [];
const ids = [];

function nodeId() {
  const abc = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return Array.from(randomBytes(40), (b) => abc[b % abc.length]).join('');
}

before(async () => {
  for (let i = 0; i < 3; i++) {
    nodes.push(await startServer(['--cluster-enabled', 'yes']));
    ids.push(nodeId());
  }
  const ranges = ['0-5460', '5461-10921', '10922-16383'];
  const text = nodes.map((n, i) => `${ids[i]} ${HOST} ${n.port} master - ${ranges[i]}\n`).join('');
  for (let i = 0; i < 3; i++) {
    const r = new Redis({ host: HOST, port: nodes[i].port, lazyConnect: true });
    await r.connect();
    assert.equal(await r.call('CLUSTERX', 'SETNODEID', ids[i]), 'OK');
    assert.equal(await r.call('CLUSTERX', 'SETNODES', text, '1'), 'OK');
    r.disconnect();
  }
});

after(async () => { for (const n of nodes) await stopServer(n); });

// Values of every size class, keyed so that each node gets some.
function values() {
  const out = new Map();
  for (let i = 0; i < 24; i++) {
    out.set(`node:${i}`, randomBytes(i % 6 === 0 ? 3 * MiB + i : 2048 + i));
  }
  return out;
}

async function keysPerNode() {
  const counts = [];
  for (const n of nodes) {
    const r = new Redis({ host: HOST, port: n.port, lazyConnect: true });
    await r.connect();
    counts.push(await r.dbsize());
    r.disconnect();
  }
  return counts;
}

describe('ioredis Cluster', () => {
  test('sets and gets multi-MiB values byte-exact across the nodes', async () => {
    const c = new Cluster([{ host: HOST, port: nodes[0].port }]);
    try {
      const vals = values();
      for (const [k, v] of vals) assert.equal(await c.set(`io:${k}`, v), 'OK');
      for (const [k, v] of vals) assert.ok((await c.getBuffer(`io:${k}`)).equals(v), k);
      assert.deepEqual(await c.mget('{io}a', '{io}b'), [null, null]);
      await assert.rejects(c.mget('io:a', 'io:b'), /CROSSSLOT/);
      assert.ok((await keysPerNode()).every((n) => n > 0));
    } finally {
      c.disconnect();
    }
  });
});

describe('valkey-glide cluster', () => {
  test('sets and gets multi-MiB values byte-exact across the nodes', async () => {
    const g = await GlideClusterClient.createClient({
      addresses: [{ host: HOST, port: nodes[1].port }], requestTimeout: 10000,
    });
    try {
      const vals = values();
      for (const [k, v] of vals) assert.equal(await g.set(`gl:${k}`, v), 'OK');
      for (const [k, v] of vals) {
        const got = await g.get(`gl:${k}`, { decoder: Decoder.Bytes });
        assert.ok(Buffer.from(got).equals(v), k);
      }
      // GLIDE splits a multi-slot MGET by slot itself.
      const many = await g.mget(['gl:node:1', 'gl:node:2', 'gl:node:3'], { decoder: Decoder.Bytes });
      assert.ok(many.every((v, i) => Buffer.from(v).equals(vals.get(`node:${i + 1}`))));
      assert.ok((await keysPerNode()).every((n) => n > 0));
    } finally {
      g.close();
    }
  });
});

// LMCache's ValkeyConnector with `valkey_mode: cluster` (lmcache_valkey.test.mjs has the
// standalone form): one GlideClusterClient per worker thread (num_workers 8), one bare key per
// chunk (no hash tag, so chunks spread over the nodes), SET key bytes EX ttl, EXISTS, GET into
// a chunk-sized buffer (any other length is a miss), and a prefix lookup as one non-atomic
// batch of EXISTS, which GLIDE splits by slot across the nodes.
describe('LMCache valkey:// in cluster mode (GlideClusterClient)', () => {
  const CHUNK = 2 * MiB;
  const TTL = 86400;
  const lmcacheKey = (i) => `meta-llama/Llama-3.1-8B-Instruct@1@0@${(0x7a000 + i).toString(16)}@bfloat16`;
  const chunk = (i) => Buffer.concat([Buffer.from(`${i}:`), randomBytes(CHUNK - `${i}:`.length)]);
  let workers = [];

  before(async () => {
    workers = await Promise.all(Array.from({ length: 8 }, () => GlideClusterClient.createClient({
      addresses: [{ host: HOST, port: nodes[2].port }], requestTimeout: 5000,
    })));
  });
  after(() => { for (const w of workers) w.close(); });

  test('put, exists, get per chunk on 8 clients; prefix lookup as one batch', async () => {
    const chunks = Array.from({ length: 32 }, (_, i) => chunk(i));
    await Promise.all(workers.map(async (g, w) => {
      for (let i = w; i < chunks.length; i += workers.length) {
        const set = await g.set(lmcacheKey(i), chunks[i], { expiry: { type: TimeUnit.Seconds, count: TTL } });
        assert.equal(set, 'OK');
      }
    }));
    await Promise.all(workers.map(async (g, w) => {
      for (let i = w; i < chunks.length; i += workers.length) {
        assert.equal(await g.exists([lmcacheKey(i)]), 1);
        const got = await g.get(lmcacheKey(i), { decoder: Decoder.Bytes });
        assert.ok(got !== null && got.length === CHUNK && Buffer.from(got).equals(chunks[i]), `chunk ${i}`);
        const ttl = await g.ttl(lmcacheKey(i));
        assert.ok(ttl > TTL - 60 && ttl <= TTL, `ttl ${ttl}`);
      }
    }));
    // The prefix lookup: the first missing chunk ends the hit run.
    const lookup = new ClusterBatch(false);
    for (let i = 0; i < 40; i++) lookup.exists([lmcacheKey(i)]);
    const found = await workers[0].exec(lookup, true);
    assert.equal(found.findIndex((x) => x === 0), 32);
    assert.ok((await keysPerNode()).every((n) => n > 0));
  });
});
