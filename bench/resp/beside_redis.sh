# Sourced by the bench/resp scripts that run larder-server beside Redis 7 over loopback: picks
# two ports ($lport for larder, $rport for Redis; a second larder takes $lport + 1) and a scratch
# directory ($work, named after $1), shuts every server down and removes it on exit, and starts
# Redis without persistence ($rpid).
lport=$((20000 + RANDOM % 20000)) rport=$((40000 + RANDOM % 20000))
work=$(mktemp -d "/tmp/larder-$1.XXXXXX")
larder_ports=("$lport")
cleanup() {
  for port in "${larder_ports[@]}" "$rport"; do
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

# start_larder PORT NAME SERVER [OPTIONS...]: larder-server SERVER on PORT, its data in
# $work/NAME (made afresh) and its log in $work/NAME.log, shut down on exit; sets $larder_pid and
# returns once it answers PING.
start_larder() {
  local port=$1 name=$2 server=$3
  shift 3
  [[ " ${larder_ports[*]} " == *" $port "* ]] || larder_ports+=("$port")
  rm -rf "${work:?}/$name"
  "$server" --port "$port" --dir "$work/$name" --unixsocket "" "$@" >"$work/$name.log" 2>&1 &
  larder_pid=$!
  wait_port "$port"
}

# shellcheck source=bench/resp/server_helpers.sh
source "$(dirname "${BASH_SOURCE[0]}")/server_helpers.sh"

redis-server --port "$rport" --dir "$work" --save "" --appendonly no --daemonize yes >/dev/null
wait_port "$rport"
rpid=$(redis-cli -p "$rport" info server | awk -F: '/^process_id/{print $2+0}')
