#!/usr/bin/env bash
# Regenerates ../kafka-*.txt: Go writes the inputs, Kafka's own assignors (the
# kafka-group-coordinator jar of each release, resolved from Maven Central)
# compute the outputs. Needs Go, Maven, a JDK 19+ (JAVA_HOME) and a JDK 17
# (JAVA17_HOME, for the JDK-dependent "wide-" cases); runs in a scratch
# directory and writes only the vector files.
#   JAVA_HOME=... JAVA17_HOME=... bash coordinator/assignor/testdata/kafkadiff/regen.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pkg=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
java=${JAVA_HOME:+$JAVA_HOME/bin/}java
javac=${JAVA_HOME:+$JAVA_HOME/bin/}javac
java17=${JAVA17_HOME:?set JAVA17_HOME to a JDK 17}/bin/java
javac17=$JAVA17_HOME/bin/javac

# shellcheck source=../../../testdata/kafkapom.sh
. "$here/../../../testdata/kafkapom.sh"
kafka_pom "$work" kafkadiff

(cd "$pkg" && go test -run TestWriteKafkaVectorInputs . -args -assignor.write-vector-inputs="$work/inputs.txt")

run() { # version → $work/out-version.txt
  local v=$1
  (cd "$work" && mvn -B -q dependency:copy-dependencies -DoutputDirectory="lib-$v" -Dkafka.version="$v")
  mkdir -p "$work/classes-$v"
  "$javac" -cp "$work/lib-$v/*" -d "$work/classes-$v" "$here/Driver.java"
  "$java" -cp "$work/classes-$v:$work/lib-$v/*" Driver < "$work/inputs.txt" > "$work/out-$v.txt" 2>/dev/null
}

jdk=$("$java" -version 2>&1 | head -1)
same=()
run 4.4.0
for v in 4.0.1 4.1.0 4.2.0 4.3.0; do
  run "$v"
  if cmp -s "$work/out-$v.txt" "$work/out-4.4.0.txt"; then same+=("$v"); else echo "kafka $v differs from 4.4.0: give it its own file" >&2; exit 1; fi
done
run 4.0.0
# JDK 17: only the wide-subscription cases, where the JDK matters.
awk '/^case wide-/{p=1} p{print} /^end$/{p=0}' "$work/inputs.txt" > "$work/wide.txt"
mkdir -p "$work/classes17"
"$javac17" -cp "$work/lib-4.4.0/*" -d "$work/classes17" "$here/Driver.java"
"$java17" -cp "$work/classes17:$work/lib-4.4.0/*" Driver < "$work/wide.txt" > "$work/out-java17.txt" 2>/dev/null
jdk17=$("$java17" -version 2>&1 | head -1)
{ echo "# kafka 4.4.0 (kafka-group-coordinator jar, $jdk17)"; echo "# java 17"; cat "$work/out-java17.txt"; } > "$pkg/testdata/kafka-4.4.0-java17.txt"
{ echo "# kafka 4.4.0 (kafka-group-coordinator jar, $jdk)"; echo "# same-as ${same[*]}"; cat "$work/out-4.4.0.txt"; } > "$pkg/testdata/kafka-4.4.0.txt"
{ echo "# kafka 4.0.0 (kafka-group-coordinator jar, $jdk)"; cat "$work/out-4.0.0.txt"; } > "$pkg/testdata/kafka-4.0.0.txt"
echo "wrote $pkg/testdata/kafka-4.4.0.txt (also ${same[*]}), kafka-4.0.0.txt and kafka-4.4.0-java17.txt"
