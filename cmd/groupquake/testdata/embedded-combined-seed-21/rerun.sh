#!/bin/sh
# Reruns the plan of this run (same seed, same plan; the interleaving will differ).
# Extra arguments (--out DIR, --keep) are passed on.
exec groupquake run --seed 21 --scenario combined --embedded --kafka 4.4.0 --kinds consumer,classic-cooperative,kgo-classic --rate 15 --duration 6s "$@"
