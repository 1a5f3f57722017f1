#!/usr/bin/env bash
# Runs the OSU micro-benchmarks' blocking collectives (an OMB 7.x tree that
# stays outside this repository, configured and built with mpicc) with their
# result check (-c) twice: on the MPI library alone and with the drop-in
# preloaded, and prints pass counts side by side.
#
#   bash scripts/osu_validation.sh OMB_SRC DROPIN_SO [OUT_DIR]
#
# OMB_SRC must already be built: ./configure CC=mpicc CXX=mpicxx && make.
# Each benchmark runs at RANKS (default 2,3,5,8; oversubscribed on small
# machines) with MPI_INT and MPI_FLOAT, in place where it offers -l, and
# with a vector datatype (-D vect:8:4) where it offers one; OMB does not
# check derived-type results, so those runs must only finish cleanly. A run
# passes when it exits 0 within 120 s and no size reports Fail. BENCHMARKS
# (names without osu_, separated by commas) runs some of them.
set -uo pipefail
src=${1:?OMB source tree, built}
dropin=$(readlink -f "${2:?libcollc_mpi.so}")
out=${3:-osu-validation}
ranks=${RANKS:-2,3,5,8}
bin=$src/c/mpi/collective/blocking
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
stock_pass=0 dropin_pass=0 total=0
: > "$out/results.txt"
# The collectives the drop-in intercepts, and alltoallw, which it hands on.
benchmarks=(allgather allgatherv allreduce alltoall alltoallv alltoallw bcast
  gather gatherv reduce reduce_scatter reduce_scatter_block scatter scatterv)
[[ -n ${BENCHMARKS:-} ]] && IFS=, read -r -a benchmarks <<< "$BENCHMARKS"
run() { # np, benchmark, options...; prints pass or FAIL, leaves run.log
  local np=$1 b=$2
  shift 2
  timeout 120 mpirun --oversubscribe -np "$np" "${launch[@]}" "$bin/osu_$b" \
    "$@" < /dev/null > "$out/run.log" 2>&1 &&
    ! grep -qE "Fail|VALIDATION ERROR" "$out/run.log" && echo pass || echo FAIL
}
for np in ${ranks//,/ }; do
  # Fewer bytes where many ranks share two cores.
  max=$(( np > 5 ? 65536 : 262144 ))
  for b in "${benchmarks[@]}"; do
    help=$("$bin/osu_$b" --help 2>&1)
    variants=("-c -T mpi_int" "-c -T mpi_float")
    [[ $help == *--in-place* ]] && variants+=("-c -T mpi_int -l")
    [[ $help == *--ddt* ]] && variants+=("-D vect:8:4")
    for v in "${variants[@]}"; do
      # shellcheck disable=SC2086 # the variant is a list of options
      args=(-m "4:$max" -i 10 -x 2 $v)
      launch=()
      s=$(run "$np" "$b" "${args[@]}")
      launch=(-x LD_PRELOAD="$dropin" -x COLLC_MPI_REPORT=1)
      d=$(run "$np" "$b" "${args[@]}")
      total=$((total + 1))
      [[ $s == pass ]] && stock_pass=$((stock_pass + 1))
      [[ $d == pass ]] && dropin_pass=$((dropin_pass + 1))
      # The drop-in's report: calls collc ran and handed on, summed.
      ours=$(grep -oE "collc [0-9]+ calls" "$out/run.log" | awk '{s += $2} END {print s + 0}')
      theirs=$(grep -oE "MPI [0-9]+ calls" "$out/run.log" | awk '{s += $2} END {print s + 0}')
      printf '%-22s np=%-2s %-18s stock %-4s drop-in %-4s collc %6s MPI %6s\n' \
        "$b" "$np" "$v" "$s" "$d" "$ours" "$theirs" | tee -a "$out/results.txt"
      [[ $d == FAIL ]] && cp "$out/run.log" "$out/fail-$b-$np-${v//[ :]/_}.log"
    done
  done
done
echo "stock: $stock_pass of $total passed; drop-in: $dropin_pass of $total passed" | tee -a "$out/results.txt"
