# Sourced by the regen.sh scripts that run a driver against Kafka's own
# kafka-group-coordinator jar (assignor/testdata/kafkadiff,
# consumergroup/testdata/metadatahash).
#
# kafka_pom DIR NAME writes DIR/pom.xml: a Maven project NAME whose one
# dependency is kafka-group-coordinator, at 4.4.0 unless
# -Dkafka.version=... says otherwise.
kafka_pom() {
  cat > "$1/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>groupquake</groupId><artifactId>$2</artifactId><version>1</version>
  <properties><kafka.version>4.4.0</kafka.version></properties>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-group-coordinator</artifactId><version>\${kafka.version}</version></dependency>
  </dependencies>
</project>
POM
}
