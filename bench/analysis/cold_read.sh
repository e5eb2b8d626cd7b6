#!/bin/bash
# The cold-read experiments behind bench/ANALYSIS.md: fio sequential/random, direct/buffered
# reads at 4 MiB; in-process cold reads with and without the bench's XXH3 check; larder-server
# cold GET on 1 connection (pipelined or not) and on 4; a flat perf profile of the server.
# Run from the repository root after scripts/build. Needs fio, redis-cli, perf (scripts/deps --bench).
set -u
B=build/bin
W=$(mktemp -d -p build bench-exp-XXXX)
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
echo "== fio 4 MiB: seq direct, rand direct, rand buffered"
for mode in "read 1" "randread 1" "randread 0"; do set -- $mode
  fio --name=x --filename=$W/fio.dat --rw=$1 --direct=$2 --ioengine=psync --bs=4m --size=1g --numjobs=1 --invalidate=1 --output-format=json 2>/dev/null > $W/fio.json
  /usr/bin/python3 -c "
import json; r=json.load(open('$W/fio.json'))['jobs'][0]['read']
print('fio rw=$1 direct=$2 bs=4m: %.2f GB/s p50 %.2f ms' % (r['bw_bytes']/1e9, r['clat_ns']['percentile']['50.000000']/1e6))"
done
rm -f $W/fio.dat
echo "== in-process 4 MiB 1 thread, verify on/off"
for v in true false; do
$B/larder-peers --peers larder,files --sizes 4mb --threads 1 --bytes_per_case $((512<<20)) --verify=$v --dir $W | /usr/bin/python3 -c "
import sys,json
for l in sys.stdin:
  r=json.loads(l); print('verify=$v %-8s cold %.2f GB/s p50 %.2f ms read/value %.2f warm %.2f' % (r['peer'], r['cold_gbs'], r['cold_p50_ms'], r['cold_read_per_value_byte'], r['warm_gbs']))"
done
echo "== server cold 4 MiB: 1 conn pipeline 1, 1 conn pipeline 4, 4 conns"
$B/larder-server --port 17392 --dir $W/srv > $W/srv.log 2>&1 & P=$!; sleep 0.5
$B/resp-load --port 17392 --phases set --size $((4<<20)) --keys 128 --save_after_set --server_pid $P >/dev/null
for args in "--conns 1 --pipeline 1" "--conns 1 --pipeline 4" "--conns 4 --pipeline 1"; do
  c0=$(cpu $P)
  $B/resp-load --port 17392 --phases cold --size $((4<<20)) --keys 128 --cold_dir $W/srv --server_pid $P $args | /usr/bin/python3 -c "
import sys,json; r=json.loads(sys.stdin.read()); print('$args: cold %.2f GB/s p50 %.2f ms read/value %.2f in %.2f s' % (r['gbs'], r['p50_ms'], r['read_per_value_byte'], r['seconds']))"
  echo "   server CPU s: $(( $(cpu $P) - c0 ))e-2"
done
echo "== warm GET 4 MiB 1 conn (the RESP transfer alone)"
$B/resp-load --port 17392 --phases get --size $((4<<20)) --keys 128 | /usr/bin/python3 -c "
import sys,json; r=json.loads(sys.stdin.read()); print('warm: %.2f GB/s p50 %.2f ms' % (r['gbs'], r['p50_ms']))"
echo "== perf (flat) of the server over cold 4 MiB 1 conn"
redis-cli -p 17392 SAVE >/dev/null
perf record -q -o $W/cold.perf -p $P -- sleep 30 >/dev/null 2>&1 & PP=$!; sleep 0.5
$B/resp-load --port 17392 --phases cold --size $((4<<20)) --keys 128 --cold_dir $W/srv --server_pid $P >/dev/null
kill -INT $PP; wait $PP
perf report -i $W/cold.perf --sort symbol --stdio 2>/dev/null | grep -v "^#" | grep "%" | head -14
kill $P; wait $P
rm -rf $W
