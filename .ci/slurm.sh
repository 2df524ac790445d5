#!/usr/bin/env bash
# A single-node SLURM cluster on this machine, for the tests of `ncprobe reproduce --executor
# slurm` (tests/executors/test_slurm.py): Debian's packages, no systemd, no accounting, everything under
# one state directory. Needs root (the daemons run as root; apt-get installs what is missing).
#
#   eval "$(bash .ci/slurm.sh start)"   # starts it; prints `export SLURM_CONF=...` on stdout
#   bash .ci/slurm.sh status            # the daemons' PIDs and `sinfo`
#   bash .ci/slurm.sh stop              # cancels this cluster's jobs, stops the daemons by PID
#
# Environment: NCPROBE_SLURM_DIR (state directory, default /tmp/ncprobe-slurm),
# NCPROBE_SLURM_PORT (slurmctld's port, default 6817; slurmd uses the next one).
# Everything but the export line goes to stderr. The daemons are stopped by the PIDs this
# script recorded when it started them, never by name.
set -euo pipefail

DIR=${NCPROBE_SLURM_DIR:-/tmp/ncprobe-slurm}
PORT=${NCPROBE_SLURM_PORT:-6817}
CONF=$DIR/slurm.conf
RUN=$DIR/run          # the PIDs this script recorded: munged.pid, slurmctld.pid, slurmd.pid
LOG=$DIR/log
export SLURM_CONF=$CONF

say() { echo "slurm.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# The PID in $RUN/<name>.pid when that process is alive and still runs <binary> (a PID the
# kernel reused for another program is never taken for ours); nothing otherwise. Debian's
# slurmctld is a link to slurmctld-wlm: the executables are compared resolved.
live_pid() {
    local name=$1 binary=$2 pid exe want
    [ -f "$RUN/$name.pid" ] || return 0
    pid=$(cat "$RUN/$name.pid")
    [[ $pid =~ ^[0-9]+$ ]] || return 0
    exe=$(readlink -f "/proc/$pid/exe" 2>/dev/null || true)
    want=$(readlink -f "$(command -v "$binary" || echo "/nonexistent/$binary")")
    if [ -n "$exe" ] && [ "$exe" = "$want" ]; then
        echo "$pid"
    fi
    return 0
}

stop_pid() {  # stop_pid NAME BINARY: TERM, then KILL after 10 s
    local name=$1 binary=$2 pid i
    pid=$(live_pid "$name" "$binary")
    if [ -n "$pid" ]; then
        kill -TERM "$pid" 2>/dev/null || true
        for i in $(seq 100); do
            [ -n "$(live_pid "$name" "$binary")" ] || break
            sleep 0.1
        done
        if [ -n "$(live_pid "$name" "$binary")" ]; then
            say "$name ($pid) still running after 10 s: SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
        say "stopped $name ($pid)"
    fi
    rm -f "$RUN/$name.pid"
}

install_packages() {
    local missing=()
    command -v munged >/dev/null || missing+=(munge)
    command -v slurmctld >/dev/null || missing+=(slurmctld)
    command -v slurmd >/dev/null || missing+=(slurmd)
    command -v sinfo >/dev/null || missing+=(slurm-client)
    [ ${#missing[@]} -eq 0 ] && return 0
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge >&2 || {
        apt-get update >&2
        apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge >&2
    }
}

node_idle() {
    local state
    state=$(sinfo -h -N -o %T 2>/dev/null | head -n1 || true)
    [ "$state" = idle ]
}

start() {
    [ "$(id -u)" -eq 0 ] || die "needs root (the SLURM daemons run as root here)"
    if [ -n "$(live_pid slurmctld slurmctld)" ] && [ -n "$(live_pid slurmd slurmd)" ]; then
        say "already running (state in $DIR)"
        echo "export SLURM_CONF=$CONF"
        return 0
    fi
    stop_all  # whatever a half-started cluster left
    install_packages
    local t0=$SECONDS
    rm -rf "$DIR"
    mkdir -p "$RUN" "$LOG" "$DIR/munge" "$DIR/spool/ctld" "$DIR/spool/d"
    chmod 700 "$DIR/munge"

    # munge: its own key and socket, so that a munged of the machine (if any) is left alone
    dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$DIR/munge/munge.key"
    local socket=$DIR/munge/munge.socket
    munged -F --force --key-file="$DIR/munge/munge.key" --socket="$socket" \
        --pid-file="$DIR/munge/munged.pid" --log-file="$LOG/munged.log" \
        --seed-file="$DIR/munge/munged.seed" >>"$LOG/munged.out" 2>&1 &
    echo $! >"$RUN/munged.pid"
    local i
    for i in $(seq 100); do
        [ -S "$socket" ] && break
        sleep 0.1
    done
    [ -S "$socket" ] || die "munged did not start: $(tail -n5 "$LOG/munged.log" "$LOG/munged.out" 2>&1)"

    # the node as slurmd sees it (CPUs, sockets, cores, memory), reached on the loopback
    local node
    node=$(slurmd -C | head -n1)
    [[ $node == NodeName=* ]] || die "slurmd -C printed no node line: $node"
    cat >"$CONF" <<EOF
# written by .ci/slurm.sh: a single-node cluster for ncprobe's tests
ClusterName=ncprobe
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$DIR/spool/ctld
SlurmdSpoolDir=$DIR/spool/d
SlurmctldPidFile=$DIR/spool/slurmctld.pid
SlurmdPidFile=$DIR/spool/slurmd.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
MailProg=/bin/true
MpiDefault=none
ReturnToService=2
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    slurmctld -D -f "$CONF" >>"$LOG/slurmctld.out" 2>&1 &
    echo $! >"$RUN/slurmctld.pid"
    slurmd -D -f "$CONF" >>"$LOG/slurmd.out" 2>&1 &
    echo $! >"$RUN/slurmd.pid"
    for i in $(seq 600); do
        node_idle && break
        if [ -z "$(live_pid slurmctld slurmctld)" ] || [ -z "$(live_pid slurmd slurmd)" ]; then
            break
        fi
        sleep 0.1
    done
    if ! node_idle; then
        say "the node did not come up idle; the logs' ends:"
        tail -n 20 "$LOG"/slurmctld.log "$LOG"/slurmd.log "$LOG"/*.out >&2 2>/dev/null || true
        stop_all
        exit 1
    fi
    say "up in $((SECONDS - t0)) s: $(sinfo -h -N -o '%N %T %c CPUs %m MB') (state in $DIR)"
    echo "export SLURM_CONF=$CONF"
}

stop_all() {
    if [ -n "$(live_pid slurmctld slurmctld)" ]; then
        # this cluster's jobs first: a job's processes outlive slurmd
        local jobs i
        jobs=$(squeue -h -o %A 2>/dev/null | sort -u || true)
        if [ -n "$jobs" ]; then
            say "cancelling jobs: $(echo $jobs)"
            # shellcheck disable=SC2086
            scancel $jobs 2>/dev/null || true
            for i in $(seq 300); do
                [ -z "$(squeue -h -o %A 2>/dev/null || true)" ] && break
                sleep 0.1
            done
        fi
    fi
    stop_pid slurmd slurmd
    stop_pid slurmctld slurmctld
    stop_pid munged munged
}

status() {
    local name pid
    for name in munged slurmctld slurmd; do
        pid=$(live_pid "$name" "$name")
        echo "$name: ${pid:-not running}"
    done
    if [ -n "$(live_pid slurmctld slurmctld)" ]; then
        echo "SLURM_CONF=$CONF"
        sinfo
    fi
}

case ${1:-} in
    start) start ;;
    stop) stop_all ;;
    status) status ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
