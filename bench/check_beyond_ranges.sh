#!/usr/bin/env bash
# ctest bench.beyond_ranges: `collc bench` on a rank count past the ranges
# coll_bench was compiled for has no candidate. The row says so and names
# the ranges, the bench ends well, and coll_bench is launched only to list
# what it runs (each launch is logged through a wrapper of MPIEXEC).
#   check_beyond_ranges.sh COLLC MPIEXEC WORK
set -uo pipefail
collc=$1 mpiexec=$2 work=$3
mkdir -p "$work"
log=$work/launches.txt wrapper=$work/mpiexec-logged
: >"$log"
# The paths reach the wrapper through its environment, whatever they hold.
printf '#!/bin/sh\necho "$*" >>"$LAUNCH_LOG"\nexec "$REAL_MPIEXEC" "$@"\n' \
  >"$wrapper"
chmod +x "$wrapper"
out=$(LAUNCH_LOG=$log REAL_MPIEXEC=$mpiexec COLLC_MPIEXEC=$wrapper \
      "$collc" bench --collective allreduce --ranks 65 --bytes 8 \
      --iterations 1 2>&1 </dev/null)
rc=$?
echo "$out"
echo "launches:"; cat "$log"
fail() { echo "FAIL: $*"; exit 1; }
[[ $rc == 0 ]] || fail "collc bench exited $rc"
grep -q "allreduce on 65 ranks: no library schedule for 65 ranks within the ranges coll_bench was compiled for (p = 2\.\.64, " <<<"$out" ||
  fail "no row naming the ranges"
[[ $(wc -l <"$log") -eq 1 ]] && grep -q -- ' --list$' "$log" ||
  fail "coll_bench was launched for more than its list"
echo "PASS"
