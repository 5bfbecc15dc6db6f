#!/bin/sh
# Reruns the plan of this run (same seed, same plan; the interleaving will differ).
# Extra arguments (--out DIR, --keep) are passed on.
exec groupquake run --seed 7 --scenario member-links --kafka 4.4.0 --nodes 1 --duration 1m0s "$@"
