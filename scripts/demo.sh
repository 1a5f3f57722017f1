#!/usr/bin/env bash
# The main job, from a fresh machine: set up, build, and run collc on the
# shipped specifications.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
echo
echo "== collc check specs/*.coll"
./build/collc check specs/*.coll
echo
echo "== collc verify specs/basics.coll specs/hypercube.coll specs/ring.coll"
./build/collc verify specs/basics.coll specs/hypercube.coll specs/ring.coll
