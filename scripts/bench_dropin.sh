#!/usr/bin/env bash
# The drop-in against the MPI library, in the same run: coll_bench --dropin
# times each collective as a program calls it (MPI_Allreduce ..., answered
# by a preloaded libcollc_mpi) against the library's own (PMPI_Allreduce),
# interleaved on the same buffers, every result checksummed against MPI's.
# Then what interposition itself costs: an 8-byte all-reduce through the
# drop-in pinned to one schedule, against that schedule's emitted function.
#
#   bash scripts/bench_dropin.sh RESULTS_DIR [MODEL_FILE[:NAME]]
# writes RESULTS_DIR/dropin.txt (ratio table), dropin-raw.txt (samples)
# and dropin-reports.txt (which schedules the drop-in ran). The drop-in
# prices by MODEL (COLLC_MPI_MODEL; in bench.sh's model.coll, the block
# ring_N for N ranks), else by the build's.
# Environment: BENCH_RANKS (default 2,8), BENCH_BYTES, BUILD (default
# build/). Runs from a bundle too (scripts/bundle.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: bench_dropin.sh RESULTS_DIR [MODEL]}
model=${2:-}
if [[ -x $here/bin/collc ]]; then
  bench=$here/libexec/collc/coll_bench lib=$here/lib/libcollc_mpi.so
else
  build=$here/../${BUILD:-build}
  bench=$build/bench/coll_bench lib=$build/runtime/mpi/libcollc_mpi.so
fi
ranks=${BENCH_RANKS:-2,8}
bytes=${BENCH_BYTES:-8,128,2048,32768,524288,4194304}
mpirun=${COLLC_MPIEXEC:-mpirun}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# A rank a core where there are enough; oversubscribed where not.
export OMPI_MCA_rmaps_base_oversubscribe=1
env_flag=-x
if ! "$mpirun" --version 2>&1 | grep -q "Open MPI"; then env_flag=-genv; fi
setenv() { # NAME VALUE in the launcher's syntax
  if [[ $env_flag == -x ]]; then echo "-x $1=$2"; else echo "-genv $1 $2"; fi
}
mkdir -p "$out"
raw=$out/dropin-raw.txt reports=$out/dropin-reports.txt
: >"$raw"
: >"$reports"
launch() { # RANKS ENV_FLAGS ARGS...: coll_bench under the drop-in
  local n=$1 env=$2; shift 2
  local m=$model
  if [[ -n $m && $m != *:* ]] && grep -q "^model ring_$n " "$m"; then
    m=$m:ring_$n
  fi
  # shellcheck disable=SC2046,SC2086
  "$mpirun" -np "$n" $(setenv LD_PRELOAD "$lib") \
    ${m:+$(setenv COLLC_MPI_MODEL "$m")} $env "$bench" "$@"
}
run() { # RANKS LABEL ENV_FLAGS ARGS...: "== LABEL RANKS", coll_bench's output
  local n=$1 label=$2; shift 2
  echo "== $label $n" >>"$raw"
  launch "$n" "$@" >>"$raw" 2>/dev/null || echo "FAILED" >>"$raw"
}
report() { # RANKS LABEL ARGS...: which schedules ran, by the drop-in's report
  local n=$1 label=$2; shift 2
  echo "== $label $n" >>"$reports"
  # The report times every call, so each call takes the whole path: it
  # runs apart from the timed calls, a few calls of each size.
  launch "$n" "$(setenv COLLC_MPI_REPORT 1)" "$@" --iterations 3 \
    >/dev/null 2>>"$reports" || echo "FAILED" >>"$reports"
}
collectives="broadcast reduce allreduce allgather reduce_scatter scatter gather scan alltoall alltoallv"
for n in ${ranks//,/ }; do
  for c in $collectives; do
    run "$n" "$c" "" --collective "$c" --dropin --bytes "$bytes"
    report "$n" "$c" --collective "$c" --dropin --bytes "$bytes"
  done
  (( (n & (n - 1)) == 0 )) || continue # the pinned schedule's sizes
  pin=$(setenv COLLC_MPI_ALLREDUCE hypercube_allreduce)
  run "$n" overhead "$pin" --collective allreduce \
    --schedule hypercube_allreduce --bytes 8 --iterations 20000
  run "$n" overhead-loop "$pin" --collective allreduce \
    --schedule hypercube_allreduce --bytes 8 --iterations 2000 --repeat 20
done
python3 - "$raw" "$out/dropin.txt" <<'PY'
import sys, statistics
raw, table = sys.argv[1], sys.argv[2]
rows, label, n, failed = {}, None, None, []
for line in open(raw):
    f = line.rstrip("\n").split("\t")
    if line.startswith("== "):
        label, n = line.split()[1], int(line.split()[2])
    elif line.startswith("FAILED"):
        failed.append(f"{label} on {n} ranks")
    elif f[0] == "size" and len(f) == 5:
        ours = statistics.median(map(float, f[3].split(",")))
        mpi = statistics.median(map(float, f[4].split(",")))
        rows.setdefault((label, n), []).append((int(f[1]), ours, mpi))
def size(b):
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= k: return f"{b // k} {unit}"
    return f"{b} B"
with open(table, "w") as t:
    def out(s=""):
        print(s); t.write(s + "\n")
    out("drop-in (libcollc_mpi) against the MPI library's own call, same run: "
        "median us, ratio drop-in/MPI")
    sizes = sorted({b for v in rows.values() for b, _, _ in v})
    for n in sorted({n for _, n in rows}):
        out(f"\n{n} ranks")
        out(f"  {'collective':15}" + "".join(f"{size(b):>10}" for b in sizes))
        for (label, m), v in rows.items():
            if m != n or label.startswith("overhead"): continue
            r = {b: o / p for b, o, p in v}
            out(f"  {label:15}" + "".join(f"{r[b]:10.2f}" if b in r else f"{'-':>10}" for b in sizes))
        for label, how in (("overhead", "each call alone"),
                           ("overhead-loop", "20 calls back to back")):
            if (label, n) in rows:
                b, o, p = rows[(label, n)][0]
                out(f"  interposition, {how}: 8-byte MPI_Allreduce through the drop-in "
                    f"pinned to hypercube_allreduce {p:.3f} us, its emitted function "
                    f"{o:.3f} us: {p / o:.2f}")
    if failed: out("\nFAILED: " + ", ".join(failed))
PY
