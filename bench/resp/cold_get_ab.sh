#!/usr/bin/env bash
# Cold GET of two larder-server builds on one data directory: resp-load's `cold` phase (SAVE,
# page cache dropped, every key read once and hashed) against build A and build B in turn, the
# order swapped every round (the second of two runs in a row meets a slightly different disk),
# then fio randread at the value size and a queue depth of the connections; prints every round
# and the medians, and B over A. For changes to the cold read path, judged within one run.
#   bench/resp/cold_get_ab.sh server-A server-B [sizes] [connections] [rounds]
#   e.g. bench/resp/cold_get_ab.sh /tmp/base/larder-server build/bin/larder-server "1048576" "1 4" 4
set -euo pipefail
a=$1 b=$2
sizes=${3:-"1048576 4194304"}
conns_list=${4:-"1 4"}
rounds=${5:-4}
load=$(dirname "$b")/resp-load
port=$((20000 + RANDOM % 20000))
work=$(mktemp -d /tmp/larder-cold-ab.XXXXXX)
pid=
stop() {
  [[ -n $pid ]] || return 0
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=
}
trap 'stop; rm -rf "$work"' EXIT
# shellcheck source=bench/resp/server_helpers.sh
source "$(dirname "$0")/server_helpers.sh"
start() {
  "$1" --port "$port" --dir "$work/data" --unixsocket "" >>"$work/server.log" 2>&1 &
  pid=$!
  wait_port "$port"
}

echo "| value bytes | conns | A GB/s (rounds) | B GB/s (rounds) | fio GB/s (rounds) | B / A |"
echo "|---|---|---|---|---|---|"
for size in $sizes; do
  keys=$(( (512 << 20) / size )); keys=$(( keys < 16 ? 16 : keys ))
  rm -rf "$work/data"
  start "$b"
  "$load" --port "$port" --phases set --size "$size" --keys "$keys" --conns 4 >/dev/null
  stop
  for conns in $conns_list; do
    for r in $(seq "$rounds"); do
      order="A B"; (( r % 2 == 0 )) && order="B A"
      for which in $order; do
        if [[ $which == A ]]; then start "$a"; else start "$b"; fi
        "$load" --port "$port" --phases cold --size "$size" --keys "$keys" --conns "$conns" \
          --cold_dir "$work/data" --server_pid "$pid" --label "$which"
        stop
      done
      depth=(--ioengine=psync)
      (( conns > 1 )) && depth=(--ioengine=io_uring "--iodepth=$conns")
      fio --name=ref --filename="$work/fio.dat" --size=512m --rw=randread --direct=1 \
        --bs="$size" "${depth[@]}" --output-format=json |
        /usr/bin/python3 -c "
import json, sys
j = json.load(sys.stdin)['jobs'][0]['read']
print(json.dumps({'label': 'fio', 'phase': 'cold', 'gbs': j['bw_bytes'] / 1e9, 'bad': 0}))"
    done | /usr/bin/python3 -c "
import json, statistics, sys
rows = {}
for line in sys.stdin:
    r = json.loads(line)
    if r.get('phase') != 'cold':
        continue
    if r['bad']:
        sys.exit('wrong replies from ' + r['label'])
    rows.setdefault(r['label'], []).append(r['gbs'])
med = {k: statistics.median(v) for k, v in rows.items()}
cell = lambda k: '%.2f (%s)' % (med[k], ', '.join('%.2f' % x for x in rows[k]))
print('| %d | %d | %s | %s | %s | %.2f |' % ($size, $conns, cell('A'), cell('B'), cell('fio'),
                                             med['B'] / med['A']))"
  done
done
