# Sourced by the bench/resp scripts that run larder-server beside Redis 7 over loopback: picks
# two ports ($lport for larder, $rport for Redis) and a scratch directory ($work, named after
# $1), shuts both servers down and removes it on exit, and starts Redis without persistence
# ($rpid).
lport=$((20000 + RANDOM % 20000)) rport=$((40000 + RANDOM % 20000))
work=$(mktemp -d "/tmp/larder-$1.XXXXXX")
cleanup() {
  redis-cli -p "$lport" shutdown nosave >/dev/null 2>&1 || true
  redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# wait_port PORT: until a server answers PING there (exit 1 after 10 s).
wait_port() { for _ in $(seq 100); do redis-cli -p "$1" ping >/dev/null 2>&1 && return; sleep 0.1; done; exit 1; }
# cpu_ticks PID: user + system clock ticks the process has used.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

redis-server --port "$rport" --dir "$work" --save "" --appendonly no --daemonize yes >/dev/null
wait_port "$rport"
rpid=$(redis-cli -p "$rport" info server | awk -F: '/^process_id/{print $2+0}')
