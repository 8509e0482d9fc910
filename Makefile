# AeroStream build, run and test entry points. `make help` lists them.
# .ci/run calls `make test`; anything CI needs is installed by a target here.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
GO ?= go

# Link-time version: make build VERSION=v0.1.0
VERSION ?= dev
LDFLAGS := -X github.com/aerostream/aerostream/tools/cli.version=$(VERSION)

# honnef.co/go/tools v0.8.x is the staticcheck release line that supports
# Go 1.26. The versioned file name makes a version bump reinstall it.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := bin/staticcheck-$(STATICCHECK_VERSION)

# Time per fuzz target for `make fuzz` (and so `make test`).
FUZZTIME ?= 10s
# Time the fuzzer may spend minimizing each new interesting input. Go's
# default is 60 s, so the first input that widened coverage took every
# worker for the rest of a 15 s run: FuzzDecodeProducerSnapshot ran 6,800
# inputs in 15 s, then stood at 0/s; with 1 s it runs about 190,000.
FUZZMINIMIZETIME ?= 1s

.PHONY: test-deploy k8s-manifests docker-build docker-smoke iceberg-python test-iceberg test-iceberg-spark test-cluster-iceberg
.PHONY: help build run test test-unit test-scale disk-tools test-crash test-objstore test-tiered measure-tiered fuzz bench lint tools clean test-controller measure-controller test-kafka test-kafka-eos test-registry kafka-clients test-cluster test-native test-console chromium

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-11s %s\n", $$1, $$2}'

build: ## build bin/aerostream
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/aerostream ./tools/aerostream

run: build ## build, then run a single-node AeroStream on the defaults (./data)
	./bin/aerostream serve

test: lint test-unit test-scale test-crash test-objstore test-tiered fuzz test-controller test-kafka test-registry test-cluster test-native test-console test-deploy test-iceberg ## everything CI runs: lint, unit, crash, object stores, tiered storage end to end, a bounded fuzz run, controller failover, real Kafka clients, the cluster under faults, the native protocol, the Helm chart and manifests, the web console in a browser, Iceberg tables read by pyiceberg

test-unit: disk-tools ## unit tests with the race detector (crash-tagged tests excluded)
	$(GO) test -race -timeout 15m ./...

# logstore's storage-failure tests (logstore/diskfull_test.go) run, as root,
# a log on a tmpfs that fills and on ext4 over a loop device that fails;
# they need mount, losetup (util-linux) and mkfs.ext4 (e2fsprogs).
disk-tools: ## install losetup and mkfs.ext4 (apt) for logstore's storage-failure tests
	@if ! command -v losetup >/dev/null || ! command -v mkfs.ext4 >/dev/null; then \
	  apt-get install -y util-linux mount e2fsprogs || { apt-get update && apt-get install -y util-linux mount e2fsprogs; }; \
	fi

# test-unit runs with the race detector, under which creating and
# restarting 20,000 partitions takes minutes; it runs here without it.
test-scale: ## 20,000 partitions on one store within the machine's open-file limit, created, written, restarted
	$(GO) test -count=1 -timeout 10m -run 'TestTwentyThousandPartitions' -v ./logstore/

test-crash: ## crash tests: kill a real aerostream process, check what survives
	$(GO) test -tags crash -timeout 15m -run Crash -count=1 -v ./tools/...

test-controller: ## controller failover: three `aerostream controller` processes on loopback, kill -9 the leader
	$(GO) test -tags controllerproc -timeout 10m -run ControllerProcess -count=1 -v ./tools/cli/

measure-controller: ## controller figures: topic-create latency, election after kill -9, snapshot/restore of 10k topics
	$(GO) test -tags measure -timeout 30m -run Measure -count=1 -v ./tools/cli/
	$(GO) test -run='^$$' -bench=10kTopics -benchtime=5x ./controller/

# Real Kafka clients against real aerostream processes
# (gateways/kafka/clients_test.go): franz-go's kgo integration suite, kcat,
# kafka-python and confluent-kafka, and a controller + store + `gateway kafka`
# run. kcat comes from Debian; the Python clients go into a venv under bin/,
# pinned to versions that support Python 3.11+.
KAFKA_VENV := bin/kafka-venv
KAFKA_PY_PKGS := kafka-python==3.0.12 'confluent-kafka[avro,protobuf,json,schemaregistry]==2.16.1'
kafka-clients: ## install kcat (apt), the Python Kafka clients (bin/kafka-venv) and Kafka's Java clients (deploy/kafka-peer)
	@test -f /tmp/aerostream-kafka-peer/lib-4.4.0/kafka-clients-4.4.0.jar || deploy/kafka-peer/setup.sh
	@if ! command -v kcat >/dev/null; then \
	  apt-get install -y kcat librdkafka-dev || { apt-get update && apt-get install -y kcat librdkafka-dev; }; \
	fi
	@if ! $(KAFKA_VENV)/bin/python -c 'import kafka, confluent_kafka' 2>/dev/null; then \
	  python3 -m venv $(KAFKA_VENV) && $(KAFKA_VENV)/bin/pip install -q $(KAFKA_PY_PKGS); \
	fi

test-kafka: kafka-clients ## Kafka gateway acceptance: franz-go suite, kcat, kafka-python, confluent-kafka, separate gateway process
	KAFKA_CLIENT_TESTS=1 KAFKA_PYTHON=$(CURDIR)/$(KAFKA_VENV)/bin/python \
	  $(GO) test -count=1 -v -timeout 40m -run '^TestClient' ./gateways/kafka/

# Exactly-once with Kafka's Java clients (gateways/kafka/
# clients_java_txn_test.go): a transactional consume-transform-produce
# loop killed with SIGKILL three times and restarted, then a read_committed
# check that every input came out once. A few minutes, so not in test-kafka.
test-kafka-eos: kafka-clients ## Kafka transactions: Java consume-transform-produce loop under kill -9, exactly once
	KAFKA_CLIENT_TESTS=1 $(GO) test -count=1 -v -timeout 20m -run '^TestJavaTxnEos$$' ./gateways/kafka/

# The schema registry against real clients (registry/clients_test.go):
# confluent-kafka's SchemaRegistryClient and its Avro, Protobuf and JSON
# Schema serializers producing and consuming through `aerostream serve`
# and through a separate `aerostream gateway kafka` (with a store),
# an incompatible Avro change refused with 409, broker-side validation,
# and franz-go's sr client on the HTTP mount. Seconds once built.
test-registry: kafka-clients ## schema registry acceptance: confluent-kafka serializers (Avro, Protobuf, JSON), 409, broker-side validation, franz-go sr
	@$(KAFKA_VENV)/bin/python -c 'import fastavro, google.protobuf, jsonschema, authlib' 2>/dev/null || $(KAFKA_VENV)/bin/pip install -q $(KAFKA_PY_PKGS)
	REGISTRY_CLIENT_TESTS=1 KAFKA_PYTHON=$(CURDIR)/$(KAFKA_VENV)/bin/python \
	  $(GO) test -count=1 -v -timeout 10m -run '^TestConfluentClients' ./registry/

# The native protocol end to end: the CLI lines as the README writes them,
# the Go SDK against serve and against controller + store + `gateway
# native` processes, and kcat on the Kafka port reading what the SDK wrote
# (and the other way), the same bytes through either port. About a minute,
# most of it building the binary.
test-native: ## native protocol acceptance: CLI as written, SDK vs serve and separate processes, kcat cross-protocol
	NATIVE_TESTS=1 $(GO) test -count=1 -v -timeout 10m ./tools/nativetest/

# The web console in Debian's headless Chromium, driven by chromedp
# (gateways/http/console): every page against a fake /api, then against a
# real `aerostream serve` with data produced and a group committed through
# franz-go. It fails on any JavaScript error or warning and saves a
# screenshot of each page in CONSOLE_ARTIFACTS. CONSOLE_TESTS=1 makes a
# missing browser a failure rather than a skip. About a minute and a half,
# most of it building the binary.
CONSOLE_ARTIFACTS ?= $(CURDIR)/bin/console-artifacts
chromium: ## install Debian's chromium (apt) for the console's browser test
	@if ! test -x /usr/bin/chromium; then \
	  apt-get install -y chromium || { apt-get update && apt-get install -y chromium; }; \
	fi

test-console: chromium ## web console in headless Chromium: every page vs a fake API and vs serve with data; screenshots in bin/console-artifacts
	CONSOLE_TESTS=1 CONSOLE_ARTIFACTS=$(CONSOLE_ARTIFACTS) CHROMIUM=/usr/bin/chromium \
	  $(GO) test -count=1 -v -timeout 10m ./gateways/http/console/

# Iceberg topics with real readers (tools/icebergtest): kcat produces into
# `serve`, pyiceberg 0.12 reads the table back through the built-in REST
# catalog (/iceberg) and the rows must equal the log, across kill -9s of
# serve, with the warehouse on local disk and on MinIO; an Avro topic reads
# back as typed columns, and a new schema version adds one. pyiceberg goes into
# a venv under bin/. About a minute once built.
ICEBERG_VENV := bin/iceberg-venv
ICEBERG_PY_PKGS := 'pyiceberg[pyarrow]==0.12.*'
iceberg-python: ## install kcat (apt) and pyiceberg 0.12 (bin/iceberg-venv)
	@if ! command -v kcat >/dev/null; then \
	  apt-get install -y kcat || { apt-get update && apt-get install -y kcat; }; \
	fi
	@if ! $(ICEBERG_VENV)/bin/python -c 'import pyiceberg, pyarrow' 2>/dev/null; then \
	  python3 -m venv $(ICEBERG_VENV) && $(ICEBERG_VENV)/bin/pip install -q $(ICEBERG_PY_PKGS); \
	fi

test-iceberg: iceberg-python ## Iceberg topics read by pyiceberg through the built-in REST catalog: exact rows across kill -9, local and MinIO warehouses
	trap '$(OBJSTORE_SERVERS) stop' EXIT; $(OBJSTORE_SERVERS) start; \
	set -a; . "$$($(OBJSTORE_SERVERS) env)"; set +a; \
	ICEBERG_PYTHON=$(CURDIR)/$(ICEBERG_VENV)/bin/python \
	  $(GO) test -count=1 -v -timeout 10m -run '^TestPyiceberg' ./tools/icebergtest/

# Iceberg topics on a cluster that commits through an external REST catalog
# (tools/clustertest, TestClusterIcebergRESTCatalog): Apache Iceberg's own
# REST catalog server, resolved from Maven by deploy/iceberg-rest/setup.sh,
# behind a controller, three stores and a gateway; the committing store is
# killed with kill -9 mid-translation and pyiceberg reads the table through
# that catalog. A JVM and about 80 MB of jars, so not part of `make test`.
ICEBERG_REST_LIB := bin/iceberg-rest-lib
test-cluster-iceberg: iceberg-python ## Iceberg topic on 3 stores via an external REST catalog (Iceberg's Java server): kill -9 of the committer, exact rows in pyiceberg, one committer per epoch
	deploy/iceberg-rest/setup.sh $(ICEBERG_REST_LIB)
	CLUSTER_TESTS=1 ICEBERG_PYTHON=$(CURDIR)/$(ICEBERG_VENV)/bin/python ICEBERG_REST_LIB=$(CURDIR)/$(ICEBERG_REST_LIB) \
	  $(GO) test -count=1 -v -timeout 10m -run '^TestClusterIcebergRESTCatalog$$' ./tools/clustertest/

# Spark reading an Iceberg topic through the built-in REST catalog: pyspark
# 3.5 from pip and iceberg-spark-runtime from Maven (Java 17). Large
# downloads and a JVM, so not part of `make test`.
SPARK_VENV := bin/spark-venv
SPARK_PY_PKGS := 'pyspark==3.5.*'
ICEBERG_SPARK_RUNTIME := org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.1
ICEBERG_SPARK_JAR := $(HOME)/.m2/repository/org/apache/iceberg/iceberg-spark-runtime-3.5_2.12/1.10.1/iceberg-spark-runtime-3.5_2.12-1.10.1.jar
test-iceberg-spark: iceberg-python ## Spark (pyspark + iceberg-spark-runtime) reads an Iceberg topic through the REST catalog: count and GROUP BY partition
	@if ! $(SPARK_VENV)/bin/python -c 'import pyspark' 2>/dev/null; then \
	  python3 -m venv $(SPARK_VENV) && $(SPARK_VENV)/bin/pip install -q $(SPARK_PY_PKGS); \
	fi
	@test -f $(ICEBERG_SPARK_JAR) || mvn -q dependency:get -Dartifact=$(ICEBERG_SPARK_RUNTIME) -Dtransitive=false
	ICEBERG_SPARK_PYTHON=$(CURDIR)/$(SPARK_VENV)/bin/python ICEBERG_SPARK_JARS=$(ICEBERG_SPARK_JAR) \
	  $(GO) test -count=1 -v -timeout 15m -run '^TestSpark$$' ./tools/icebergtest/

# A controller, three stores and two `aerostream gateway kafka` processes on
# loopback (tools/clustertest): the Jepsen-style run with its checker and
# the failover times, a drain under load, and franz-go's kgo suite with
# KGO_TEST_RF=3 beside its single-node run. The tests bound their own
# faults and waits well inside the timeout, so that their cleanups always
# run.
test-cluster: ## cluster acceptance: kill -9/SIGSTOP stores under acks=all producers (nothing acked lost), failover time, drain, kgo suite at RF=3
	CLUSTER_TESTS=1 $(GO) test -count=1 -v -timeout 15m ./tools/clustertest/

# The object store providers' acceptance suites against real servers (MinIO,
# fake-gcs-server, Azurite), which the script installs into bin/ on first use
# and starts on loopback; without the env file those tests skip. All of
# ./tierd/objstore/... runs, so the server-gated credential, missing-bucket
# and wrong-key tests run beside the acceptance suites.
OBJSTORE_SERVERS := tierd/objstore/testservers.sh
test-tiered: build ## tiered storage end to end: serve + MinIO/fake-gcs-server/Azurite + franz-go, kill -9 during uploads, bucket faults
	trap '$(OBJSTORE_SERVERS) stop' EXIT; $(OBJSTORE_SERVERS) start; \
	set -a; . "$$($(OBJSTORE_SERVERS) env)"; set +a; \
	$(GO) test -count=1 -timeout 20m -v ./tools/tiertest/

measure-tiered: build ## tiered storage figures against MinIO: cold fetch vs plain GET, warm cache, produce p99 with tiering on/off
	trap '$(OBJSTORE_SERVERS) stop' EXIT; $(OBJSTORE_SERVERS) start; \
	set -a; . "$$($(OBJSTORE_SERVERS) env)"; set +a; \
	$(GO) test -tags measure -count=1 -timeout 30m -run Measure -v ./tools/tiertest/

test-objstore: ## object storage acceptance against MinIO, fake-gcs-server and Azurite
	trap '$(OBJSTORE_SERVERS) stop' EXIT; $(OBJSTORE_SERVERS) start; \
	set -a; . "$$($(OBJSTORE_SERVERS) env)"; set +a; \
	$(GO) test -count=1 -timeout 10m ./tierd/objstore/...

# Every `func FuzzXxx(` in a _test.go file is a target; new ones join on
# their own. go test -fuzz takes one package and one target at a time.
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline
# exceeded" as -fuzztime runs out, with no failing input (go.dev/issue/75804,
# fixed in Go 1.27; CI met it in FuzzDecodeRaftLog). A failure that says only
# that and wrote no new input under testdata/fuzz is run again, twice at
# most; any other failure, or one that wrote an input, fails at once.
fuzz: ## run every fuzz target for FUZZTIME (default 10s) each
	@found=0; log=$$(mktemp); trap 'rm -f "$$log"' EXIT; \
	for f in $$(find . -name '*_test.go' -not -path './.*' -not -path '*/testdata/*' | sort); do \
	  for name in $$(sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)\(.*/\1/p' "$$f"); do \
	    found=$$((found+1)); dir=$$(dirname "$$f"); \
	    for try in 1 2 3; do \
	      echo "fuzz $$dir $$name for $(FUZZTIME)"; \
	      inputs=$$( (ls "$$dir/testdata/fuzz/$$name" 2>/dev/null || true) | wc -l); \
	      if $(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZMINIMIZETIME) "$$dir" 2>&1 | tee "$$log"; then break; fi; \
	      if [ $$try -lt 3 ] && [ "$$( (ls "$$dir/testdata/fuzz/$$name" 2>/dev/null || true) | wc -l)" = "$$inputs" ] && \
	         grep -qx '    context deadline exceeded' "$$log" && ! grep -q 'Failing input written' "$$log"; then \
	        echo "fuzz: $$name: the Go fuzz coordinator's deadline race (go.dev/issue/75804), no failing input; running it again"; \
	        continue; \
	      fi; \
	      exit 1; \
	    done; \
	  done; \
	done; \
	echo "fuzz: $$found target(s)"

bench: ## storage engine benchmarks
	$(GO) test -run='^$$' -bench=. -benchmem ./logstore/...

# lint checks the files behind build tags too. go vet ./... skips them, and
# no CI target builds the measure tests at all.
LINT_TAGS = crash controllerproc measure

lint: $(STATICCHECK) ## gofmt, go vet and staticcheck (with the test build tags)
	@unformatted=$$(gofmt -l $$(find . -name '*.go' -not -path './.*' -not -path '*/testdata/*')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet -tags '$(LINT_TAGS)' ./...
	$(STATICCHECK) -tags '$(LINT_TAGS)' ./...

tools: $(STATICCHECK) ## install the tools the tests need into bin/

$(STATICCHECK):
	@mkdir -p bin
	GOBIN=$(CURDIR)/bin/.install $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv bin/.install/staticcheck $@
	rm -rf bin/.install

clean: ## remove build output (not ./data)
	rm -rf bin

# Deploy files (deploy/README.md). helm and kubeconform install with go
# install into bin/ once, under versioned names; kubeconform's Kubernetes
# schemas come from the PyPI package kubernetes-validate (kubeconform's own
# download from GitHub cannot work here), unpacked into bin/ once for the
# oldest Kubernetes the chart supports and the newest the package knows.
HELM_VERSION := v3.22.0
HELM := bin/helm-$(HELM_VERSION)
KUBECONFORM_VERSION := v0.7.0
KUBECONFORM := bin/kubeconform-$(KUBECONFORM_VERSION)
K8S_SCHEMA_PKG_VERSION := 1.37.0
K8S_SCHEMAS := bin/k8s-schemas-$(K8S_SCHEMA_PKG_VERSION)
K8S_VERSIONS := 1.30.0 1.37.0

test-deploy: $(HELM) $(KUBECONFORM) $(K8S_SCHEMAS)/.done ## Helm chart and deploy/k8s: helm lint and template with several value sets, kubeconform -strict, refused values
	HELM=$(HELM) KUBECONFORM=$(KUBECONFORM) K8S_SCHEMAS=$(K8S_SCHEMAS) K8S_VERSIONS='$(K8S_VERSIONS)' deploy/test-deploy.sh

k8s-manifests: $(HELM) ## write deploy/k8s from the Helm chart (ci/k8s-manifests-values.yaml)
	deploy/k8s-manifests.sh $(HELM) deploy/k8s

$(HELM):
	@mkdir -p bin
	GOBIN=$(CURDIR)/bin/.install-helm $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv bin/.install-helm/helm $@
	rm -rf bin/.install-helm

$(KUBECONFORM):
	@mkdir -p bin
	GOBIN=$(CURDIR)/bin/.install-kubeconform $(GO) install github.com/yannh/kubeconform/cmd/kubeconform@$(KUBECONFORM_VERSION)
	mv bin/.install-kubeconform/kubeconform $@
	rm -rf bin/.install-kubeconform

$(K8S_SCHEMAS)/.done: deploy/schemas/k8s_schemas.py
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	python3 -m pip download --quiet --no-deps kubernetes-validate==$(K8S_SCHEMA_PKG_VERSION) -d "$$tmp"; \
	rm -rf $(K8S_SCHEMAS); python3 deploy/schemas/k8s_schemas.py "$$tmp"/kubernetes_validate-*.whl $(K8S_SCHEMAS) $(K8S_VERSIONS)
	touch $@

# The image and the compose smoke test need a Docker engine. Where only the
# docker client is installed (this project's machines: `docker --version`
# answers, `docker info` cannot reach a daemon), both stop with that reason.
DOCKER_ENGINE_CHECK = @command -v docker >/dev/null || { echo "$@: no docker command: install Docker (engine and client) to build the image"; exit 1; }; \
	docker info >/dev/null 2>&1 || { echo "$@: the docker client finds no Docker engine (docker info fails): this machine has the client only; run make $@ where an engine runs"; exit 1; }

docker-build: ## build the aerostream:dev image (needs a Docker engine)
	$(DOCKER_ENGINE_CHECK)
	docker build --build-arg VERSION=$(VERSION) -t aerostream:dev .

docker-smoke: docker-build ## docker compose: AeroStream + MinIO with tiering on, then the smoke test (needs a Docker engine)
	$(DOCKER_ENGINE_CHECK)
	trap 'docker compose down -v' EXIT; \
	docker compose up -d --wait; \
	docker compose run --rm smoke
