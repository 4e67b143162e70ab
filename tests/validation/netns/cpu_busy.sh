#!/bin/sh
# cpu_busy.sh [LABEL]: how busy the CPUs are over one second (from /proc/stat), and a
# warning when other work takes more than half of them: timings on the namespace
# cluster share the machine with it.
label=${1:-cpu}
sample() { awk '/^cpu / { idle = $5 + $6; total = 0; for (i = 2; i <= NF; i++) total += $i; print idle, total }' /proc/stat; }
a=$(sample); sleep 1; b=$(sample)
ncpu=$(getconf _NPROCESSORS_ONLN)
echo "$a $b" | awk -v label="$label" -v n="$ncpu" -v load="$(cut -d' ' -f1 /proc/loadavg)" '{
  busy = 100 * (1 - ($3 - $1) / ($4 - $2))
  printf "%s: CPUs %.0f%% busy over 1 s before the run (%d CPUs, load average %s)\n", label, busy, n, load
  if (busy > 50) printf "WARNING: %s: the machine is busy with other work: timings may be off\n", label > "/dev/stderr"
}'
