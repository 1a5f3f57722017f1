#!/usr/bin/env bash
# Runs MPICH's collective test suite (test/mpi/coll of an MPICH source tree,
# which stays outside this repository) twice: on the MPI library alone and
# with the drop-in preloaded, and prints the pass counts side by side.
#
#   bash scripts/external_coll_suite.sh MPICH_SRC DROPIN_SO [OUT_DIR]
#
# Builds each test with mpicc against MPICH's test utilities (mtest.c);
# tests that need MPICH's datatype pools or GPU support are left out. Each
# run has a 60 s limit: a hang counts as a failure. MAX_NP caps the rank
# count (default 8, oversubscribed on small machines). MPI=mpich builds and
# runs the suite with MPICH (mpicc.mpich, mpiexec.mpich) instead of Open
# MPI; DROPIN_SO is then the drop-in built for MPICH
# (build/e2e-mpich/runtime/mpi/libcollc_mpi.so).
set -uo pipefail
src=${1:?MPICH source tree}
dropin=$(readlink -f "${2:?libcollc_mpi.so}")
out=${3:-external-suite}
max_np=${MAX_NP:-8}
mkdir -p "$out/bin"
t=$src/test/mpi
cat > "$out/mpitestconf.h" <<'H'
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define HAVE_STDARG_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_MPI_WIN_CREATE 1
#define USE_STRICT_MPI 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_NONE
H
: > "$out/mtest_mpix.h" # MPICH extensions: none
mpi=${MPI:-openmpi}
# Each MPI's compiler and launcher, and the launcher's arguments that give
# every rank the drop-in and its report.
case $mpi in
  mpich)
    mpicc=mpicc.mpich
    launcher=(mpiexec.mpich)
    preload=(-genv LD_PRELOAD "$dropin" -genv COLLC_MPI_REPORT 1) ;;
  openmpi)
    mpicc=mpicc
    launcher=(mpirun --oversubscribe)
    preload=(-x "LD_PRELOAD=$dropin" -x COLLC_MPI_REPORT=1) ;;
  *) echo "MPI must be openmpi or mpich, not $mpi" >&2; exit 2 ;;
esac
cc="$mpicc -O1 -w -I$out -I$t/include"
# MPICH's harness: main (run_mpitests.c) calls the test's run(), single
# threaded (mtest_single.c).
utils=()
for u in mtest mtest_common mtest_single run_mpitests; do
  $cc -c "$t/util/$u.c" -o "$out/$u.o" 2>>"$out/build-mtest.log" || {
    cat "$out/build-mtest.log"; exit 1; }
  utils+=("$out/$u.o")
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
built=0 skipped=0
seen=()
stock_pass=0 dropin_pass=0 total=0
: > "$out/results.txt"
while read -r name np rest; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  [[ "$np" =~ ^[0-9]+$ ]] || continue
  (( np > max_np )) && np=$max_np
  args=""
  [[ "$rest" =~ arg=([^ ]+) ]] && args=${BASH_REMATCH[1]}
  [[ -f "$t/coll/$name.c" ]] || continue
  # The list repeats a test under MPICH's own algorithm settings (env=...),
  # which mean nothing to another MPI: each name, size and argument once.
  key="$name $np $args"
  [[ " ${seen[*]-} " == *" [$key] "* ]] && continue
  seen+=("[$key]")
  [[ -f "$out/bin/$name.skip" ]] && continue
  if [[ ! -x "$out/bin/$name" ]]; then
    # A test with a main of its own (MPICH's older ones) takes the
    # utilities without the harness's main.
    objs=("${utils[@]}")
    grep -qE '^int main *\(' "$t/coll/$name.c" && objs=("${utils[@]:0:3}")
    if ! $cc "$t/coll/$name.c" "${objs[@]}" -o "$out/bin/$name" -lm \
        > "$out/bin/$name.log" 2>&1; then
      skipped=$((skipped + 1)); touch "$out/bin/$name.skip"; continue
    fi
    built=$((built + 1))
  fi
  total=$((total + 1))
  verdict() {  # MPICH's tests print " No Errors" at rank 0 on success
    timeout 60 "${launcher[@]}" -np "$np" "$@" "$out/bin/$name" $args < /dev/null \
      > "$out/run.log" 2>&1 && grep -q "No Errors" "$out/run.log" && echo pass || echo FAIL
  }
  s=$(verdict)
  d=$(verdict "${preload[@]}")
  [[ $s == pass ]] && stock_pass=$((stock_pass + 1))
  [[ $d == pass ]] && dropin_pass=$((dropin_pass + 1))
  # The drop-in's report: calls collc ran and handed on, summed.
  ours=$(grep -oE "collc [0-9]+ calls" "$out/run.log" | awk '{s += $2} END {print s + 0}')
  theirs=$(grep -oE "MPI [0-9]+ calls" "$out/run.log" | awk '{s += $2} END {print s + 0}')
  printf '%-20s np=%-2s %-12s stock %-4s drop-in %-4s collc %6s MPI %6s\n' \
    "$name" "$np" "$args" "$s" "$d" "$ours" "$theirs" | tee -a "$out/results.txt"
  [[ $d == FAIL ]] && cp "$out/run.log" "$out/fail-$name-$np.log"
done < <(grep -v '^#' "$t/coll/testlist.in")
echo "built $built, left out $skipped (they need MPICH's datatype pools, or MPI-1 calls MPI-3 removed)"
echo "stock: $stock_pass of $total passed; drop-in: $dropin_pass of $total passed" | tee -a "$out/results.txt"
