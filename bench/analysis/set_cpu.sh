#!/bin/bash
# The SET experiment behind bench/ANALYSIS.md: 1 GiB of 32 MiB SETs on 4 and 16 connections
# into larder-server (then SAVE) and Redis 7; server CPU seconds per GiB and a perf profile at
# 16 connections. Run from the repository root after scripts/build (scripts/deps --bench).
set -u
B=build/bin
W=$(mktemp -d -p build bench-exp-XXXX)
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
$B/larder-server --port 17393 --dir $W/srv > $W/srv.log 2>&1 & P=$!
mkdir -p $W/redis; redis-server --port 17394 --dir $W/redis --save '' --appendonly no > $W/redis.log 2>&1 & R=$!; sleep 0.5
for c in 4 16; do
  for pid_port in "$P 17393 larder" "$R 17394 redis"; do set -- $pid_port
    redis-cli -p $2 FLUSHALL >/dev/null
    c0=$(cpu $1)
    if [ $c = 16 ]; then perf record -q -o $W/$3.perf -p $1 -- sleep 60 >/dev/null 2>&1 & PP=$!; sleep 0.3; fi
    extra=""; [ $3 = larder ] && extra="--save_after_set"
    $B/resp-load --port $2 --phases set --size $((32<<20)) --keys 32 --conns $c --server_pid $1 $extra --label $3 | /usr/bin/python3 -c "
import sys,json; r=json.loads(sys.stdin.read()); print('$3 c=$c SET %.2f GB/s p50 %.0f ms, SAVE %.2f s' % (r['gbs'], r['p50_ms'], r['save_seconds']))"
    echo "   $3 CPU s per GiB (SET+SAVE): $(awk -v a=$(cpu $1) -v b=$c0 'BEGIN{printf "%.2f", (a-b)/100}')"
    if [ $c = 16 ]; then kill -INT $PP; wait $PP; perf report -i $W/$3.perf --sort symbol --stdio 2>/dev/null | grep -v "^#" | grep "%" | head -8 | cut -c1-80; fi
  done
done
kill $P $R; wait $P $R
rm -rf $W
