#!/bin/sh
# Reruns the plan of this run (same seed, same plan; the interleaving will differ).
# Extra arguments (--out DIR, --keep) are passed on.
exec groupquake run --seed 4498864386336983422 --scenario baseline --kafka 4.4.0 --nodes 1 --records 50000000 --duration 20s "$@"
