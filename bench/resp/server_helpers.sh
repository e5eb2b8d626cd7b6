# Sourced by the bench/resp scripts: shell helpers for the servers they start.

# wait_port PORT: until a server answers PING there (exit 1 after 10 s).
wait_port() {
  for _ in $(seq 100); do redis-cli -p "$1" ping >/dev/null 2>&1 && return; sleep 0.1; done
  echo "no server answers PING on port $1 after 10 s" >&2
  exit 1
}
# cpu_ticks PID: user + system clock ticks the process has used.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
