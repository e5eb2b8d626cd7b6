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

# shellcheck source=bench/resp/server_helpers.sh
source "$(dirname "${BASH_SOURCE[0]}")/server_helpers.sh"

redis-server --port "$rport" --dir "$work" --save "" --appendonly no --daemonize yes >/dev/null
wait_port "$rport"
rpid=$(redis-cli -p "$rport" info server | awk -F: '/^process_id/{print $2+0}')
