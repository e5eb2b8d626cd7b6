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
# shellcheck source=bench/resp/beside_redis.sh
source "$(dirname "$0")/beside_redis.sh" set-vs-redis

# shellcheck disable=SC2086
start_larder "$lport" larder "$server" $larder_args
lpid=$larder_pid
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
