#!/usr/bin/env bash
# The main job, from a fresh machine: set up, build, then check, prove,
# compile a spec to C++ and run the emitted code under mpirun.
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
echo "== mpirun -np 8 build/examples/prefix_sums/prefix_sums_example (Algorithm 4.9, emitted by collc)"
mpirun --oversubscribe -np 8 build/examples/prefix_sums/prefix_sums_example
