#!/usr/bin/env bash
# GET of values in memory, run on the io thread or handed to an engine thread, beside Redis 7:
# resp-load's `get` phase (every reply hashed by the client) against a larder-server with
# inline-get-max-bytes 0 (every GET on engine-threads), one with the default, and Redis, in
# alternating rounds; prints the median GB/s and p50/p99 latency of each.
#   bench/resp/get_inline.sh [larder-server] [sizes] [connections] [rounds]
#   e.g. bench/resp/get_inline.sh build/bin/larder-server "262144 1048576 4194304" "1 4" 3
set -euo pipefail
server=${1:-build/bin/larder-server}
sizes=${2:-"262144 1048576 4194304 16777216"}
conns_list=${3:-"1 4"}
rounds=${4:-3}
load=$(dirname "$server")/resp-load
# shellcheck source=bench/resp/beside_redis.sh
source "$(dirname "$0")/beside_redis.sh" get-inline
pool_port=$((lport + 1))
start_larder "$pool_port" pool "$server" --inline-get-max-bytes 0
start_larder "$lport" inline "$server"

echo "| value bytes | conns | server | GB/s | p50 ms | p99 ms |"
echo "|---|---|---|---|---|---|"
for size in $sizes; do
  keys=$(( (512 << 20) / size )); keys=$(( keys < 16 ? 16 : keys ))
  for port in "$pool_port" "$lport" "$rport"; do
    redis-cli -p "$port" flushall >/dev/null
    "$load" --port "$port" --phases set --size "$size" --keys "$keys" >/dev/null
  done
  for conns in $conns_list; do
    for _ in $(seq "$rounds"); do
      for entry in "larder, every GET on engine-threads:$pool_port" "larder, default:$lport" \
                   "redis 7:$rport"; do
        "$load" --port "${entry##*:}" --phases get --size "$size" --keys "$keys" \
          --conns "$conns" --label "${entry%:*}"
      done
    done | /usr/bin/python3 -c "
import json, statistics, sys
rows = {}
for line in sys.stdin:
    r = json.loads(line)
    if r['bad']:
        sys.exit('wrong replies from ' + r['label'])
    rows.setdefault(r['label'], []).append(r)
for label, rs in rows.items():
    med = lambda k: statistics.median(r[k] for r in rs)
    print('| %d | %d | %s | %.2f | %.3f | %.3f |' % ($size, $conns, label, med('gbs'),
                                                    med('p50_ms'), med('p99_ms')))"
  done
done
