#!/usr/bin/env bash
# Stop exactly the daemons tests/cluster/start_slurm.sh started (their PIDs are in $STATE/pids).
set -uo pipefail
STATE=${SLURM_TEST_STATE:-/tmp/crl-approx-slurm}
[ -f "$STATE/pids" ] || exit 0
mapfile -t pids < <(grep -E '^[0-9]+$' "$STATE/pids")
for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
for _ in $(seq 50); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
done
for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
rm -f "$STATE/pids"
echo "slurm stopped (pids ${pids[*]})"
