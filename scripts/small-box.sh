#!/usr/bin/env bash
# Runs a command as if on a box with little memory: inside a memory cgroup of its own whose
# limit covers the process's memory *and* the page cache of the files it reads, so a vector
# index searched from disk really is read from disk once the limit is reached (a Raspberry Pi's
# 1-4 GB, not this machine's 24 GiB of page cache). Prints the cgroup's peak and how often it
# hit the limit, and removes the cgroup. Needs root and a cgroup v1 memory controller or
# cgroup v2 with the memory controller enabled.
#
#   sudo bash scripts/small-box.sh 512 -- target/release/examples/index_soak --to 1000000
set -euo pipefail

if [ $# -lt 3 ] || [ "$2" != "--" ]; then
    echo "usage: $0 LIMIT_MIB -- COMMAND [ARGS...]" >&2
    exit 2
fi
limit_mib=$1
shift 2
name="weft-small-box-$$"

if [ -d /sys/fs/cgroup/memory ] && [ -w /sys/fs/cgroup/memory ]; then
    cg=/sys/fs/cgroup/memory/$name
    mkdir "$cg"
    echo $((limit_mib * 1024 * 1024)) > "$cg/memory.limit_in_bytes"
    peak_file=$cg/memory.max_usage_in_bytes
    events() { echo "limit reached $(cat "$cg/memory.failcnt") times"; }
elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
    cg=/sys/fs/cgroup/$name
    mkdir "$cg"
    echo $((limit_mib * 1024 * 1024)) > "$cg/memory.max"
    peak_file=$cg/memory.peak
    events() { grep -E '^(high|max|oom_kill) ' "$cg/memory.events" | tr '\n' ' '; echo; }
else
    echo "no writable memory cgroup here (needs root and the memory controller)" >&2
    exit 1
fi
cleanup() {
    # The command's processes have ended; the cgroup can go.
    rmdir "$cg" 2>/dev/null || true
}
trap cleanup EXIT

echo "running in a memory cgroup of ${limit_mib} MiB (process memory and page cache): $*" >&2
status=0
# The subshell moves itself into the cgroup, then becomes the command.
bash -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' _ "$cg" "$@" || status=$?
echo "cgroup peak $(( $(cat "$peak_file") / 1024 / 1024 )) MiB of ${limit_mib}; $(events)" >&2
exit $status
