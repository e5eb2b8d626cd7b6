#!/usr/bin/env bash
# SET throughput of larder-server beside Redis 7 with redis-benchmark -c 4 over loopback, and
# the server CPU each SET costs (from /proc/<pid>/stat). Each size runs larder, redis, larder,
# redis against the same two servers (started once, empty; Redis without persistence).
#   bench/resp/set_vs_redis.sh [larder-server] [sizes] [redis-benchmark args] [larder args]
#   e.g. bench/resp/set_vs_redis.sh build/bin/larder-server "1048576 4194304" "-r 100000000"
# Without -r every SET overwrites one key (plain redis-benchmark); with it, keys are fresh.
set -euo pipefail
server=${1:-build/bin/larder-server}
sizes=${2:-"1048576 4194304 16777216"}
extra=${3:-}
larder_args=${4:-}
per_mib=3000  # requests per size: 3000 MiB of values, at least 100
lport=$((20000 + RANDOM % 20000)) rport=$((40000 + RANDOM % 20000))
work=$(mktemp -d /tmp/larder-set-vs-redis.XXXXXX)
cleanup() {
  redis-cli -p "$lport" shutdown nosave >/dev/null 2>&1 || true
  redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

wait_port() { for _ in $(seq 100); do redis-cli -p "$1" ping >/dev/null 2>&1 && return; sleep 0.1; done; exit 1; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

redis-server --port "$rport" --dir "$work" --save "" --appendonly no --daemonize yes >/dev/null
wait_port "$rport"
rpid=$(redis-cli -p "$rport" info server | awk -F: '/^process_id/{print $2+0}')
mkdir "$work/larder"
# shellcheck disable=SC2086
"$server" --port "$lport" --dir "$work/larder" --unixsocket "" $larder_args >"$work/larder.log" 2>&1 &
lpid=$!
wait_port "$lport"
echo "| server | value bytes | redis-benchmark args | SET/s | server CPU ms per SET |"
echo "|---|---|---|---|---|"
for size in $sizes; do
  n=$((per_mib * 1048576 / size)); n=$((n < 100 ? 100 : n))
  for who in larder redis larder redis; do
    port=$lport pid=$lpid
    [ "$who" = redis ] && port=$rport pid=$rpid
    t0=$(cpu_ticks "$pid")
    # shellcheck disable=SC2086
    rps=$(redis-benchmark -p "$port" -d "$size" -n "$n" -c 4 -t set $extra --csv 2>/dev/null |
      awk -F'"' '/^"SET"/{print $4}')
    t1=$(cpu_ticks "$pid")
    awk -v who="$who" -v size="$size" -v extra="${extra:-(one key)}" -v rps="$rps" \
      -v ticks=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v n="$n" \
      'BEGIN { printf "| %s | %d | %s | %s | %.3f |\n", who, size, extra, rps, ticks * 1000 / hz / n }'
  done
done
