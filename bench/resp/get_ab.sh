#!/usr/bin/env bash
# GET of one key in memory, two larder-server builds beside Redis 7: redis-benchmark -c 4 -t get
# (1 GiB of values per round, at least 1000 GETs) against build A, build B and Redis in turn, the
# order reversed every other round (the machine drifts); prints every round's GET/s, the
# medians, B over A and each build over Redis. For changes to the warm GET path, judged within
# one run; redis-benchmark's one thread is the pace-setter here, so read B / A with that in mind
# (bench/ANALYSIS.md §2).
#   bench/resp/get_ab.sh server-A server-B [sizes] [rounds]
#   e.g. bench/resp/get_ab.sh /tmp/base/larder-server build/bin/larder-server "1048576 4194304" 6
set -euo pipefail
a=$1 b=$2
sizes=${3:-"1048576 4194304"}
rounds=${4:-6}
# shellcheck source=bench/resp/beside_redis.sh
source "$(dirname "$0")/beside_redis.sh" get-ab
bport=$((lport + 1))
start_larder "$lport" a "$a"
start_larder "$bport" b "$b"

echo "| value bytes | A GET/s (rounds) | B GET/s (rounds) | Redis GET/s (rounds) | B / A | A, B ×Redis |"
echo "|---|---|---|---|---|---|"
for size in $sizes; do
  n=$(( (1024 << 20) / size )); n=$(( n < 1000 ? 1000 : n ))
  for port in "$lport" "$bport" "$rport"; do
    redis-cli -p "$port" flushall >/dev/null
    redis-benchmark -p "$port" -d "$size" -n 100 -c 4 -t set -q >/dev/null 2>&1
  done
  for r in $(seq "$rounds"); do
    order="A:$lport B:$bport Redis:$rport"
    (( r % 2 == 0 )) && order="Redis:$rport B:$bport A:$lport"
    for entry in $order; do
      # stderr: redis-benchmark warns that CONFIG GET save and appendonly answer no pair.
      rps=$(redis-benchmark -p "${entry#*:}" -d "$size" -n "$n" -c 4 -t get --csv 2>/dev/null |
            awk -F, '/^"GET"/ {gsub(/"/, "", $2); print $2}')
      [[ -n $rps ]] || { echo "redis-benchmark against ${entry%%:*} gave no figure" >&2; exit 1; }
      echo "${entry%%:*} $rps"
    done
  done | /usr/bin/python3 -c "
import statistics, sys
rows = {}
for line in sys.stdin:
    who, rps = line.split()
    rows.setdefault(who, []).append(float(rps))
med = {who: statistics.median(v) for who, v in rows.items()}
cell = lambda who: '%.0f (%s)' % (med[who], ', '.join('%.0f' % x for x in rows[who]))
print('| %d | %s | %s | %s | %.2f | %.2f, %.2f |' % ($size, cell('A'), cell('B'), cell('Redis'),
      med['B'] / med['A'], med['A'] / med['Redis'], med['B'] / med['Redis']))"
done
