#!/usr/bin/env bash
# The main job, from a fresh machine: set up, build, then check, prove,
# compile a spec to C++ and run the emitted code (on the local backend, or
# under mpirun with COLLC_DEMO_MPI=1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

echo
echo "== collc check specs/*.coll specs/library/*.coll"
./build/collc check specs/*.coll specs/library/*.coll

echo
echo "== collc verify specs/basics.coll specs/hypercube.coll specs/ring.coll"
./build/collc verify specs/basics.coll specs/hypercube.coll specs/ring.coll

echo
echo "== collc cost specs/library/alltoall.coll --schedule ring_alltoall --p 16"
./build/collc cost specs/library/alltoall.coll --schedule ring_alltoall --p 16

echo
echo "== collc compile specs/hypercube.coll -o build/demo --namespace demo --param d=1..6"
./build/collc compile specs/hypercube.coll -o build/demo --namespace demo --param d=1..6
ls -l build/demo

echo
echo "== mpicxx scripts/demo_prefix_sums.cpp build/demo/hypercube.cpp -lcollc_runtime -o build/demo/prefix_sums"
mpicxx -std=c++20 -O2 -DOMPI_SKIP_MPICXX=1 -Ibuild/demo -Iruntime/include \
  scripts/demo_prefix_sums.cpp build/demo/hypercube.cpp \
  build/runtime/libcollc_runtime.a -pthread -o build/demo/prefix_sums

echo
if [ "${COLLC_DEMO_MPI:-0}" = 1 ]; then
  echo "== mpirun -np 8 build/demo/prefix_sums --mpi (Algorithm 4.9, emitted by collc)"
  mpirun --oversubscribe -np 8 build/demo/prefix_sums --mpi
else
  echo "== build/demo/prefix_sums (Algorithm 4.9, emitted by collc; 8 ranks as threads,"
  echo "   the local backend; COLLC_DEMO_MPI=1 runs it under mpirun -np 8)"
  build/demo/prefix_sums
fi
