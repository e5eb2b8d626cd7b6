#!/usr/bin/env bash
# GET throughput of larder-server per `sendfile` mode beside Redis 7, with redis-benchmark -c 4
# over loopback, and the server CPU each GET costs (from /proc/<pid>/stat). Each mode's server
# gets the same value (SET by redis-benchmark, then SAVE so it sits in a blob file).
#   bench/resp/get_send_modes.sh [larder-server] [sizes] [modes] [requests-per-MiB]
#   e.g. bench/resp/get_send_modes.sh build/bin/larder-server "1048576 4194304" "remote always"
# A mode may carry other options of larder.conf after commas, each name=value, for the same
# comparison under another setting: "remote remote,mapped-reads=no".
set -euo pipefail
server=${1:-build/bin/larder-server}
sizes=${2:-"1048576 4194304 16777216"}
modes=${3:-"remote always remote"}
per_mib=${4:-4000}
# shellcheck source=bench/resp/beside_redis.sh
source "$(dirname "$0")/beside_redis.sh" send-modes
# run NAME PID PORT SIZE N: one redis-benchmark GET pass, printed as a table row
run() {
  local t0 t1 rps
  t0=$(cpu_ticks "$2")
  rps=$(redis-benchmark -p "$3" -d "$4" -n "$5" -c 4 -t get --csv 2>/dev/null | awk -F'"' '/^"GET"/{print $4}')
  t1=$(cpu_ticks "$2")
  awk -v name="$1" -v size="$4" -v rps="$rps" -v ticks=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" \
    -v n="$5" 'BEGIN { printf "| %s | %d | %s | %.3f |\n", name, size, rps, ticks * 1000 / hz / n }'
}

echo "| server | value bytes | GET/s | server CPU ms per GET |"
echo "|---|---|---|---|"
for size in $sizes; do
  n=$(( per_mib * 1048576 / size )); n=$(( n < 100 ? 100 : n ))
  for entry in $modes; do
    mode=${entry%%,*} extra=()
    IFS=, read -ra opts <<<"${entry#"$mode"}"
    for opt in "${opts[@]}"; do [ -n "$opt" ] && extra+=("--${opt%%=*}" "${opt#*=}"); done
    start_larder "$lport" larder "$server" --sendfile "$mode" "${extra[@]}"
    lpid=$larder_pid
    redis-benchmark -p "$lport" -d "$size" -n 20 -c 4 -t set -q >/dev/null 2>&1
    redis-cli -p "$lport" save >/dev/null
    run "larder, sendfile $entry" "$lpid" "$lport" "$size" "$n"
    redis-cli -p "$lport" shutdown nosave >/dev/null 2>&1 || true
    wait "$lpid" || true
  done
  redis-benchmark -p "$rport" -d "$size" -n 20 -c 4 -t set -q >/dev/null 2>&1
  run "redis 7" "$rpid" "$rport" "$size" "$n"
done
