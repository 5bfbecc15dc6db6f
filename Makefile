# groupquake: `make test` is the project's test command (.ci/run calls it).
# It installs and starts what the tests need (a Docker engine, the Kafka
# images), then runs every tier with gotestsum, writing JUnit XML to build/.

GO        ?= go
# Kafka versions the real-cluster tiers run against (images are built for
# each): coordinator/version's pinned pair (version.Pinned) unless given.
ifeq ($(origin VERSIONS),undefined)
VERSIONS := $(shell $(GO) run ./tools/versions -pinned)
endif
ifeq ($(strip $(VERSIONS)),)
$(error VERSIONS is empty: `$(GO) run ./tools/versions -pinned` printed nothing; name them, e.g. make test VERSIONS=4.4.0)
endif
# VERSIONS is comma-separated; a space-separated list (VERSIONS="4.4.0 4.2.1")
# means the same.
comma := ,
empty :=
space := $(empty) $(empty)
override VERSIONS := $(subst $(space),$(comma),$(strip $(VERSIONS)))
# Packages whose tests need more than Go: real clusters in containers, and
# results' report rendered in headless Chromium (installed by the test when
# missing). They run one package at a time so that two clusters never share
# the two cores.
# harness/run's own real-cluster tests (TestBaselineRun on every version,
# TestKilledRun) cost about 70 s.
CLUSTER_PKGS := ./harness/cluster/... ./harness/run/ ./suites/... ./results/
GOTESTSUM := $(GO) tool gotestsum --format pkgname-and-test-fails

export TESTCONTAINERS_HOST_OVERRIDE := 127.0.0.1
export TESTCONTAINERS_RYUK_DISABLED := true
export GROUPQUAKE_KAFKA_VERSIONS := $(VERSIONS)
# Suites keep every run directory (plan, history, verdicts, report.html) here.
export GROUPQUAKE_RUNS_DIR := $(CURDIR)/build/runs
# Where the Kafka images come from (groupquake image build --image-source):
# auto uses an apache/kafka image already in the engine, else builds one on
# this Debian machine without any registry; official pulls apache/kafka from
# the engine's registry (the workflows on GitHub's Ubuntu runners, where the
# local build refuses the non-Debian host); build always builds.
IMAGE_SOURCE ?= auto
ifeq ($(strip $(IMAGE_SOURCE)),)
$(error IMAGE_SOURCE is empty: use auto, official or build, e.g. make test IMAGE_SOURCE=official)
endif
# How long `make soak` keeps starting runs (CI's cluster tier soaks 30s).
SOAK_DURATION ?= 1h
# How many fresh-seed runs `make hunt` makes per version.
HUNT_RUNS ?= 20
# The protocol mix of every hunt run (e.g. mixed); empty: each seed chooses.
HUNT_MIX ?=
# HUNT_FROM numbers the hunt's runs from K: a hunt split into several invocations goes on with the rotation of families, high intensity and Java mix.
HUNT_FROM ?= 0

# The group sizes and protocols `make scale` measures (the nightly workflow's),
# on a 3-node cluster of SCALE_KAFKA.
SCALE_MEMBERS ?= 1000,5000,10000
SCALE_PROTOCOLS ?= consumer,classic
SCALE_KAFKA ?= 4.4.0

# The rolling upgrade `make upgrade` validates at full length (the nightly
# workflow's matrix); CI's cluster tier runs it short, from the oldest of
# VERSIONS to the newest.
UPGRADE_FROM ?= 4.1.2
UPGRADE_TO ?= 4.4.0
# The releases `make diff` compares (groupquake diff --from DIFF_FROM --to DIFF_TO).
DIFF_FROM ?= 4.1.2
DIFF_TO ?= 4.4.0
# Faults of the nemesis during the upgrade and its baseline (run.Scenarios()).
UPGRADE_SCENARIO ?= baseline
# Roll the binaries back after the upgrade: before-finalize or after-finalize (empty: no downgrade).
UPGRADE_DOWNGRADE ?=
# The seed of the upgrade's workload plan: a number (13 is the regression's), or random for a fresh one
# (logged with the flag that reruns it).
UPGRADE_SEED ?= 13
# The release `make java` runs TestMatrix's Java mix on: the default (the first pinned release).
JAVA_MATRIX_KAFKA = $(firstword $(subst $(comma), ,$(shell $(GO) run ./tools/versions -pinned)))
# Variants of `make migration` (the nightly workflow runs each): static members, each replacement a
# rolling bounce of one group.instance.id into the other protocol (true or false), and the faults of
# the nemesis beside the migration's steps (baseline, broker-faults or member-links).
MIGRATION_STATIC ?= false
MIGRATION_SCENARIO ?= baseline
# Nodes of each migration cluster: 1, or 3 for broker faults that move the coordinator.
MIGRATION_NODES ?= 1

# The client scorecard `make scorecard` measures (docs/scorecard.md): every group of
# SCORECARD_GROUPS (member kinds comma-separated, one group per word) runs SCORECARD_SEEDS fresh
# seeds on a SCORECARD_NODES-node cluster of each of SCORECARD_VERSIONS under each scenario family of
# SCORECARD_FAMILIES, SCORECARD_DURATION of workload each; the run directories go to SCORECARD_OUT,
# then `groupquake report` writes trend.html and scorecard.html there and prints the scorecard.
# SCORECARD_LOCK prefixes each run's command (one run per prefixed command), e.g. a lock shared with
# the machine's other users of its Docker engine: SCORECARD_LOCK='flock -w 7200 /var/lock/gq'.
SCORECARD_GROUPS ?= classic,kgo-classic,java-classic consumer,kgo-consumer,java-consumer
SCORECARD_VERSIONS ?= $(VERSIONS)
SCORECARD_FAMILIES ?= member-links broker-faults churn combined
SCORECARD_SEEDS ?= 2
SCORECARD_DURATION ?= 20s
SCORECARD_NODES ?= 3
SCORECARD_OUT ?= build/scorecard
SCORECARD_LOCK ?=

.PHONY: test check unit engine images python-member cluster-tests soak hunt share-hunt goclients java upgrade share-upgrade migration diff run bench scale mutate scorecard sweep clean docs

test: check unit images cluster-tests

## check: formatting and vet, the same as before every commit.
check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## docs: write the README's table of checkers from harness/check's registry
## (tools/glossary; its test fails when the table is stale).
docs:
	$(GO) run ./tools/glossary

## unit: every test that needs no Docker (real-cluster tests skip under -short and say so).
unit: build
	$(GOTESTSUM) --junitfile build/junit-unit.xml -- -short -count=1 -timeout 15m ./...

## engine: install Debian's docker.io and start dockerd when no engine answers.
engine:
	$(GO) run ./cmd/groupquake engine up

## images: get (once, then cached) the Kafka image of every tested version, from IMAGE_SOURCE.
images: engine
	$(GO) run ./cmd/groupquake image build --image-source $(IMAGE_SOURCE) --kafka $(VERSIONS)

# UNIT_ONLY: tests of CLUSTER_PKGS that the cluster tier skips because the
# unit tier (go test -short ./...) already did all of their work: they never
# check testing.Short, themselves or through a helper (clustertest.Start
# does), so -short changes nothing for them. Together they cost about 2 min
# a tier (TestDifferentialKfake replays every vector against kfake, 30 s;
# harness/run's members on the embedded cluster and in JVMs, 90 s). A test
# of CLUSTER_PKGS that takes a second or more without a cluster belongs
# here. The repository's TestUnitOnlyRunsOnce (tiers_test.go) fails when a
# name here is no test of CLUSTER_PKGS, or names a test that reaches
# testing.Short (skipping it here would lose what it does without -short);
# -skip matches every package, so a name must be pure in each package that
# has it.
UNIT_ONLY := TestDifferentialKfake \
	TestEmbeddedCluster \
	TestSupervisorRestartsARefusedStaticMember TestSupervisorKeepsTheRefusedRetry \
	TestSharedJVM TestMemberContract TestJavaMemberContract TestEmbeddedShareRun \
	TestDriverDoesNotSpinOnAFatalMember TestRunHealsTheLinksAnEarlierRunLeft \
	TestNemesisOverlapsTriggersAndSerialisesNodes TestNemesisUpgradeStepsSerialiseAndAreAwaited \
	TestNemesisRecordsFlapEdges TestNemesisNodeFaultAfterTheWorkload TestNemesisHealPastItsBoundSaysSo \
	TestStreamedReportIsTheSamePage TestReportMergesTinyOwnerships
UNIT_ONLY_SKIP := ^($(subst $(space),|,$(strip $(UNIT_ONLY))))$$

## python-member: python3 with confluent-kafka for the confluent-python member kinds
## (clients/process/python), installed with pip when missing; the cluster tier's tests of
## those kinds fail, saying so, when it cannot be.
python-member:
	@python3 -c 'import confluent_kafka' 2>/dev/null || python3 -m pip install 'confluent-kafka>=2.12' || echo "python-member: no confluent-kafka: TestPythonMemberContract and TestConfluentPythonMemberCheck will fail"

## Every target that runs tests against real Kafka clusters in containers ends with `groupquake sweep`,
## whether its tests passed or not: a test binary that panics or times out never reaches the end of
## clustertest.Main, which removes the clusters its tests shared (clustertest.Shared), and Ryuk is off.
## Plain sweep removes only what processes that are gone left (never a live run's, never a kept
## cluster). $(call swept,COMMANDS) runs COMMANDS (which stop at the first that fails), then the sweep;
## the commands' exit status is the target's, and a failing sweep fails a target that passed.
## TestClusterTargetsSweepWhateverHappens fails on a target that runs such tests without it.
swept = status=0; { $(1); } || status=$$?; \
	$(GO) run ./cmd/groupquake sweep || { echo "$@: groupquake sweep failed"; [ $$status -ne 0 ] || status=1; }; \
	exit $$status

## cluster-tests: tests against real Kafka clusters in containers.
cluster-tests: build python-member
	$(call swept,$(GOTESTSUM) --junitfile build/junit-cluster.xml -- -count=1 -p 1 -timeout 45m -skip '$(UNIT_ONLY_SKIP)' $(CLUSTER_PKGS))

## soak: seeded runs back to back for SOAK_DURATION (the nightly workflow runs hours).
soak: images build
	$(call swept,$(GOTESTSUM) --junitfile build/junit-soak.xml -- -count=1 -p 1 -timeout 0 ./suites/soak/ -run TestSoak -args -soak.duration=$(SOAK_DURATION))

## share-hunt: HUNT_RUNS fresh-seed share-group runs (KIP-932) per version of VERSIONS that has share
## groups, the families and the share member kinds in turn (the nightly workflow's).
share-hunt: images build
	$(call swept,$(GOTESTSUM) --junitfile build/junit-share-hunt.xml -- -count=1 -p 1 -timeout 0 ./suites/chaos/ -run TestShareFresh -args -chaos.share-fresh=$(HUNT_RUNS))

## hunt: HUNT_RUNS fresh-seed chaos runs per version of VERSIONS, every scenario family in turn (the nightly workflow's).
hunt: images build
	$(call swept,$(GOTESTSUM) --junitfile build/junit-hunt.xml -- -count=1 -p 1 -timeout 0 ./suites/chaos/ -run TestFresh -args -chaos.fresh=$(HUNT_RUNS) -chaos.fresh-from=$(HUNT_FROM) -chaos.mix=$(HUNT_MIX))

## goclients: the Go client kinds (Sarama beside groupquake's classic member, kafka-go alone), one scenario family each, on the first version of VERSIONS with fresh seeds (the nightly workflow's).
goclients: images build
	$(call swept,$(GOTESTSUM) --junitfile build/junit-goclients.xml -- -count=1 -p 1 -timeout 60m ./suites/chaos/ -run TestGoClients -args -chaos.goclients -chaos.seeds=random)

## java: every Java group (the official KafkaConsumer beside groupquake's and kgo's members) on every version of VERSIONS (the nightly workflow's: every served one), then member-check of the Spring Kafka member on the embedded cluster.
java: images build
	$(call swept,$(GOTESTSUM) --junitfile build/junit-java.xml -- -count=1 -p 1 -timeout 120m ./suites/conformance/ -run TestJavaMembers -args -java.all && \
	GROUPQUAKE_KAFKA_VERSIONS=$(JAVA_MATRIX_KAFKA) $(GOTESTSUM) --junitfile build/junit-java-chaos.xml -- -count=1 -p 1 -timeout 30m ./suites/chaos/ -run 'TestMatrix/.*/.*/java/' -args -chaos.java && \
	$(GOTESTSUM) --junitfile build/junit-spring.xml -- -count=1 -timeout 15m ./suites/conformance/ -run TestSpringKafkaMemberCheck -args -spring-kafka)

## migration: the online protocol migration (classic → consumer → classic and back) under every
## group.consumer.migration.policy on every version of VERSIONS, one 1-node cluster per policy (~4.5 min a version);
## MIGRATION_STATIC=true bounces static members into the other protocol, MIGRATION_SCENARIO=broker-faults adds the nemesis.
migration: images build
	$(call swept,$(GOTESTSUM) --junitfile build/junit-migration.xml -- -count=1 -p 1 -timeout 90m ./suites/migration/ -run 'TestMigration$$' -args -migration.all -migration.static=$(MIGRATION_STATIC) -migration.scenario=$(MIGRATION_SCENARIO) -migration.nodes=$(MIGRATION_NODES))

## upgrade: a full-length rolling upgrade UPGRADE_FROM → UPGRADE_TO under every checker, beside its baseline.
upgrade: engine build
	$(GO) run ./cmd/groupquake image build --image-source $(IMAGE_SOURCE) --kafka $(UPGRADE_FROM),$(UPGRADE_TO)
	$(call swept,$(GOTESTSUM) --junitfile build/junit-upgrade.xml -- -count=1 -p 1 -timeout 60m ./suites/upgrade/ -run TestRollingUpgrade -args -upgrade.long -upgrade.from=$(UPGRADE_FROM) -upgrade.to=$(UPGRADE_TO) -upgrade.scenario=$(UPGRADE_SCENARIO) -upgrade.downgrade=$(UPGRADE_DOWNGRADE) -upgrade.seed=$(UPGRADE_SEED))

## share-upgrade: a share group (share, kgo-share, java-share) through a rolling upgrade, 4.2.1 to 4.4.0.
share-upgrade: engine build
	$(GO) run ./cmd/groupquake image build --image-source $(IMAGE_SOURCE) --kafka 4.2.1,4.4.0
	$(call swept,$(GOTESTSUM) --junitfile build/junit-share-upgrade.xml -- -count=1 -p 1 -timeout 30m ./suites/upgrade/ -run TestShareRollingUpgrade -args -upgrade.share)

## diff: what DIFF_FROM and DIFF_TO do differently (groupquake diff): the conformance vectors and the
## scripted scenarios on a 1-node cluster of each in turn (~3 min); exit 1 on an unexplained difference.
diff: engine build
	$(GO) run ./cmd/groupquake diff --from $(DIFF_FROM) --to $(DIFF_TO) --image-source $(IMAGE_SOURCE) --out build/runs/diff-$(DIFF_FROM)-$(DIFF_TO)

## run: the main job (see README).
run: engine
	$(GO) run ./cmd/groupquake run

## bench: benchmarks (image build, cluster start beside its floor, memory, a broker's load of 1M
## __consumer_offsets records beside the reference coordinator's replay, recording, reading and checking
## per event, report, assignors, assignors and reconciliation beside Kafka's).
bench: engine
	$(call swept,$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./harness/cluster/ ./cmd/groupquake/scale/ && \
	$(GO) test -run '^$$' -bench . -benchtime 3x ./harness/check/ ./harness/history/ ./harness/replay/ ./results/ ./clients/assign/ ./coordinator/assignor/ && \
	$(GO) test -run '^$$' -bench VsKafka -timeout 60m ./harness/kafkaref/)

## scale: SCALE_MEMBERS lightweight members in one group, per protocol of SCALE_PROTOCOLS, on scale's defaults
## (docs/measurements/scale.md):
## the reports as JSON in build/scale.json, the nodes' logs in build/scale-logs/. Not part of `make test`.
scale: engine build
	$(GO) run ./cmd/groupquake image build --image-source $(IMAGE_SOURCE) --kafka $(SCALE_KAFKA)
	$(GO) run ./cmd/groupquake scale --kafka $(SCALE_KAFKA) --members $(SCALE_MEMBERS) --protocol $(SCALE_PROTOCOLS) --json --logs build/scale-logs > build/scale.json

## mutate: mutation score of each area of MUTATE_AREAS (tools/mutate/mutants/AREA.json, run with
## that list's test command); an area below its list's min_score (or MUTATE_MIN, when given) fails
## the target after every area ran. Summaries: build/mutate-AREA.json.
MUTATE_AREAS ?= check coordinator classic consumer
MUTATE_MIN ?=
MUTATE_JOBS ?= 1
mutate: build
	@status=0; for area in $(MUTATE_AREAS); do \
		echo "== make mutate: $$area (tools/mutate/mutants/$$area.json)"; \
		start=$$(date +%s); \
		$(GO) run ./tools/mutate -mutants tools/mutate/mutants/$$area.json -j $(MUTATE_JOBS) $(if $(MUTATE_MIN),-min-score $(MUTATE_MIN)) -json build/mutate-$$area.json || status=1; \
		echo "== $$area took $$(( $$(date +%s) - start ))s"; \
	done; exit $$status

## scorecard: the client scorecard (docs/scorecard.md) of fresh-seed runs of each group of SCORECARD_GROUPS on
## each of SCORECARD_VERSIONS under each of SCORECARD_FAMILIES, SCORECARD_SEEDS seeds each (1 to 10; every run
## is bounded at 10 minutes, then interrupted as Ctrl-C does); a run that fails or cannot be carried out does not stop the others.
scorecard: engine build
	@case "$(SCORECARD_SEEDS)" in [1-9]|10) ;; *) echo "SCORECARD_SEEDS=$(SCORECARD_SEEDS): give 1 to 10"; exit 2;; esac
	$(GO) build -o build/groupquake-scorecard ./cmd/groupquake
	@versions="$$(echo '$(SCORECARD_VERSIONS)' | tr , ' ')"; \
	total=$$(( $(SCORECARD_SEEDS) * $$(echo $$versions | wc -w) * $$(echo '$(SCORECARD_FAMILIES)' | wc -w) * $$(echo '$(SCORECARD_GROUPS)' | wc -w) )); \
	echo "== make scorecard: $$total runs into $(SCORECARD_OUT)"; n=0; \
	for seed in $$(seq 1 $(SCORECARD_SEEDS)); do for v in $$versions; do for f in $(SCORECARD_FAMILIES); do for g in $(SCORECARD_GROUPS); do \
		n=$$((n+1)); dir="$(SCORECARD_OUT)/$$v/$$f/$$(echo $$g | tr , +)-$$seed"; \
		if [ -e "$$dir/verdicts.json" ]; then echo "== run $$n of $$total: $$dir is done"; continue; fi; \
		rm -rf "$$dir"; echo "== run $$n of $$total: Kafka $$v, $$f, kinds $$g -> $$dir (load $$(cut -d' ' -f1-3 /proc/loadavg))"; \
		$(SCORECARD_LOCK) timeout -s INT -k 60 600 ./build/groupquake-scorecard run --scenario $$f --kafka $$v --nodes $(SCORECARD_NODES) --kinds $$g --duration $(SCORECARD_DURATION) --out "$$dir"; \
		echo "== exit $$?"; \
	done; done; done; done
	./build/groupquake-scorecard report $(SCORECARD_OUT)
	./build/groupquake-scorecard report --scorecard $(SCORECARD_OUT) | tee $(SCORECARD_OUT)/scorecard.txt
	./build/groupquake-scorecard report --scorecard --by kind $(SCORECARD_OUT) | tee $(SCORECARD_OUT)/scorecard-by-kind.txt
	./build/groupquake-scorecard findings triage $(SCORECARD_OUT) | tee $(SCORECARD_OUT)/triage.txt

sweep:
	$(GO) run ./cmd/groupquake sweep

build:
	@mkdir -p build

clean:
	rm -rf build
