#!/usr/bin/env bash
# Start a one-node SLURM cluster on this machine for the cluster test: munged, slurmctld, slurmd,
# with one fake GPU so that GPU-tagged jobs can be scheduled. Root on Debian 12, no systemd.
# Writes the PIDs it started to $SLURM_TEST_STATE/pids; stop_slurm.sh ends exactly those.
# Facts (measured on this kind of machine): SLURM 22.05 installs and starts in ~12 s; no cgroups
# needed (proctrack/linuxproc, task/none); no accounting database, so the test profile queries
# job status with squeue and MinJobAge here is far above 3 × the first status-check delay.
set -euo pipefail
STATE=${SLURM_TEST_STATE:-/tmp/crl-approx-slurm}
mkdir -p "$STATE"
: >"$STATE/pids"

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
    echo "installing slurmctld slurmd slurm-client munge"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        slurmctld slurmd slurm-client munge >"$STATE/apt.log" 2>&1
fi

host=$(hostname -s)
cpus=$(nproc)
mem=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /run/munge /var/log/munge /var/lib/munge

cat >/etc/slurm/slurm.conf <<CONF
# one-node test cluster written by tests/cluster/start_slurm.sh
ClusterName=crltest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$STATE/jobcomp.log
MpiDefault=none
ReturnToService=2
MinJobAge=600
GresTypes=gpu
NodeName=$host CPUs=$cpus RealMemory=$mem Gres=gpu:1 State=UNKNOWN
PartitionName=main Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
echo "NodeName=$host Name=gpu File=/dev/null" >/etc/slurm/gres.conf

# munge: a key, then the daemon as the munge user
if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown -R munge:munge /etc/munge /run/munge /var/log/munge /var/lib/munge
chmod 0400 /etc/munge/munge.key
chmod 0755 /run/munge
runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid
for _ in $(seq 50); do [ -s /run/munge/munged.pid ] && break; sleep 0.1; done
cat /run/munge/munged.pid >>"$STATE/pids"
echo >>"$STATE/pids"

rm -f "$STATE/slurmctld.pid" "$STATE/slurmd.pid"
/usr/sbin/slurmctld -c -i  # -c: clean start, forget jobs of earlier runs
for _ in $(seq 100); do [ -s "$STATE/slurmctld.pid" ] && break; sleep 0.1; done
cat "$STATE/slurmctld.pid" >>"$STATE/pids"
/usr/sbin/slurmd
for _ in $(seq 100); do [ -s "$STATE/slurmd.pid" ] && break; sleep 0.1; done
cat "$STATE/slurmd.pid" >>"$STATE/pids"

# wait until the node is idle
for _ in $(seq 120); do
    state=$(sinfo -h -n "$host" -o %t 2>/dev/null || true)
    if [ "$state" = "idle" ]; then
        echo "slurm up: node $host idle, $cpus CPUs, ${mem} MB, 1 fake GPU; pids $(tr '\n' ' ' <"$STATE/pids")"
        exit 0
    fi
    sleep 0.5
done
echo "slurm did not become idle (state: ${state:-none}); logs in $STATE" >&2
tail -20 "$STATE/slurmctld.log" "$STATE/slurmd.log" >&2 || true
exit 1
