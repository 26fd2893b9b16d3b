# The two commands of the README are `make run` and `make test`; everything else supports them.
# Every swift invocation runs with deterministic hashing (Shared/README.md, "Build pitfalls", 1).

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
export SWIFT_DETERMINISTIC_HASHING := 1

SWIFT ?= swift
CONFIG ?= debug
# make images builds release binaries unless told otherwise (CONFIG=debug: the build make test already has).
CONFIG_IMAGES = $(if $(filter command line,$(origin CONFIG)),$(CONFIG),release)
PG := deploy/local/postgres.sh
# protoc-gen-swift is built in its own scratch folder: building it in .build would make the next normal build
# compile every executable of every dependency (Shared/README.md, "Build pitfalls", 2).
PROTOC_GEN_SWIFT := .build-protoc/debug/protoc-gen-swift
PROTO_OUT := Shared/Models/Generated
PROTO_OPTS := Visibility=Package,FileNaming=PathToUnderscores,UseAccessLevelOnImports=true
# Our products, built one by one: a plain `swift build` also builds the executables of dependencies (swift-protobuf's
# C++ protoc among them, minutes on 2 cores). deploy/local/build-products.sh skips them when no source changed since
# they were last built.
PRODUCTS := test-result-service verification-service submission-service portal-service distribution-service \
            federation-service efgs-gateway data-donation-service cwa
# With SKIP_BUILD=1 (what `make test` passes to its sub-makes, after its own `swift build --build-tests` built every
# product) the builds are skipped: each no-op `swift build` still costs seconds of package loading and planning.
build_products = $(if $(SKIP_BUILD),:,SWIFT="$(SWIFT)" deploy/local/build-products.sh $(2) $(1))
BUILD_PRODUCTS = $(call build_products,$(PRODUCTS),$(CONFIG))

.PHONY: help build lint format test test-unit test-browser e2e drills observability-pictures observability-rules e2e-federation bench-federation bench-peak images e2e-containers run stop db-start db-stop db-status protos protos-check protoc-tools bench privacy-check bench-distribution distribute deploy-check clean

help: ## List the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

build: ## Build every product (debug; CONFIG=release for release)
	$(BUILD_PRODUCTS)

test: lint db-start ## The lint gate, PostgreSQL if needed, moto for the S3 tests, build, the whole suite, the browser test, the end-to-end journeys (loopback, two federating countries, containers), the drills, deploy-check
	database_env="$$($(PG) env)"; eval "$$database_env"; \
	moto_python="$$(deploy/local/moto.sh)"; \
	export EN_REQUIRE_DB=1 EN_REQUIRE_S3=1 EN_MOTO_PYTHON="$$moto_python"; \
	$(SWIFT) build --build-tests; \
	$(SWIFT) test --skip-build
	$(MAKE) test-browser SKIP_BUILD=1
	$(MAKE) e2e SKIP_BUILD=1 CONFIG=debug
	$(MAKE) drills SKIP_BUILD=1 CONFIG=debug
	$(MAKE) e2e-federation SKIP_BUILD=1 CONFIG=debug
	$(MAKE) e2e-containers CONFIG=debug
	$(MAKE) deploy-check

# Our Swift sources: everything git knows of but the generated protobuf code, which `make protos` owns.
SWIFT_SOURCES = $$(git ls-files -co --exclude-standard -- '*.swift' | grep -v '^$(PROTO_OUT)/')
SHELL_SCRIPTS = $$(git ls-files -co --exclude-standard -- 'deploy/*.sh' '.ci/run')

lint: ## Fail on code that `make format` would change (swift format, .swift-format), on shellcheck findings in deploy/, on a citation REFERENCES.md lacks and on a Markdown link that does not resolve
	$(SWIFT) format lint --strict --parallel $(SWIFT_SOURCES)
	deploy/local/lib.sh need_commands shellcheck
	shellcheck --external-sources $(SHELL_SCRIPTS)
	python3 deploy/local/docs-check.py
	@echo "lint: swift format, shellcheck and the documents' references found nothing"

format: ## Rewrite the Swift sources in the committed style (.swift-format)
	$(SWIFT) format --in-place --parallel $(SWIFT_SOURCES)

test-unit: ## Run the suite without a database (database tests are skipped, visibly)
	$(SWIFT) test

test-browser: ## Drive the portal in headless Chromium: CLI user, login, TOTP, teleTAN, rate limit, logout
	$(call build_products,portal-service verification-service test-result-service,debug)
	deploy/local/browser-test.sh

e2e: ## A second fleet (ports +100, .data/e2e) and the whole journey through the gateway with cwa; N passed, M failed
	$(BUILD_PRODUCTS)
	CONFIG=$(CONFIG) deploy/local/e2e.sh

drills: ## A fleet of its own (ports +600, .data/drills): races on single-use secrets, secrets at rest; N passed, M failed
	$(BUILD_PRODUCTS)
	CONFIG=$(CONFIG) deploy/local/drills.sh

observability-pictures: ## Prometheus's graph page of the key panels' queries, from a fleet under cwa load (deploy/observability/pictures)
	$(BUILD_PRODUCTS)
	CONFIG=$(CONFIG) deploy/local/observability-pictures.sh

observability-rules: ## Write deploy/observability's rules and alerts as PrometheusRule objects into the Kubernetes monitoring component
	deploy/observability/prometheus-rules.sh >deploy/k8s/components/monitoring/prometheus-rules.yaml

e2e-federation: ## Two fleets (DE, FR) and an efgs-gateway (.data/e2e-federation): keys federate both ways, and the failures
	$(call build_products,$(PRODUCTS),$(CONFIG))
	CONFIG=$(CONFIG) SKIP_BUILD=1 deploy/local/e2e-federation.sh

images: ## Every image with podman, no registry: a debootstrap base, the services from host binaries (CONFIG=release), PostgreSQL and nginx stand-ins
	CONFIG=$(CONFIG_IMAGES) deploy/local/images.sh

e2e-containers: ## The compose fleet in podman, on images of CONFIG (debug) binaries, and the whole journey through its gateway
	CONFIG=$(CONFIG) deploy/local/images.sh
	E2E_FLEET=containers CONFIG=$(CONFIG) deploy/local/e2e.sh

run: ## PostgreSQL, every service and the gateway on loopback, federating through a local efgs-gateway; print the URLs; Ctrl-C stops everything
	$(BUILD_PRODUCTS)
	CONFIG=$(CONFIG) EN_FEDERATION=$${EN_FEDERATION:-on} deploy/local/run.sh

stop: ## Stop what `make run` started (gateway, services and PostgreSQL)
	deploy/local/run.sh stop

distribute: ## One distribution run now, with the settings of `make run` (the served one runs hourly)
	CONFIG=$(CONFIG) deploy/local/run.sh distribute

db-start: ## Start the local PostgreSQL cluster (.data/postgres, 127.0.0.1:54329), creating it if needed
	@$(PG) start >/dev/null

db-stop: ## Stop the local PostgreSQL cluster
	@$(PG) stop

db-status: ## Is the local PostgreSQL cluster running?
	@$(PG) status

protoc-tools:
	@deploy/local/lib.sh need_commands protoc:protobuf-compiler
	$(SWIFT) build -c debug --scratch-path .build-protoc --product protoc-gen-swift

protos: protoc-tools ## Regenerate Shared/Models/Generated from protos/
	rm -f $(PROTO_OUT)/*.pb.swift
	cd protos && protoc --plugin=protoc-gen-swift=../$(PROTOC_GEN_SWIFT) --swift_out=../$(PROTO_OUT) \
		--swift_opt=$(PROTO_OPTS) $$(find . -name '*.proto' | LC_ALL=C sort)
	@echo "generated $$(ls $(PROTO_OUT)/*.pb.swift | wc -l) files into $(PROTO_OUT)"

protos-check: protos ## Fail when the committed generated code differs from what protos/ generates
	@if [ -n "$$(git status --porcelain -- $(PROTO_OUT))" ]; then \
		git status --short -- $(PROTO_OUT); \
		echo "protos-check: generated code is out of date; run 'make protos' and commit the result"; exit 1; fi
	@echo "protos-check: generated code matches protos/"

bench: ## Measure test-result, verification and submission throughput against the local database (see README)
	$(SWIFT) build -c release --product test-result-service
	$(SWIFT) build -c release --product verification-service
	$(SWIFT) build -c release --product submission-service
	deploy/local/bench.sh

privacy-check: ## Dummy vs real submissions through the gateway: 10 runs of 500 + 500 (release), K of 10 not distinguishable, then pooled (KS test and a classifier)
	$(call build_products,$(PRODUCTS),release)
	CONFIG=release deploy/local/privacy-check.sh

bench-federation: ## 100,000 keys up and down through a local efgs-gateway (BENCH_KEYS), against a plain COPY (release)
	$(call build_products,federation-service efgs-gateway submission-service,$(or $(BENCH_CONFIG),release))
	CONFIG=$(or $(BENCH_CONFIG),release) deploy/local/bench-federation.sh

bench-peak: ## The worst day: 1.5 M keys in a day (700,000 in one hour) + 1 M federated, one run (release) against a plain COPY, then the audit
	$(SWIFT) build -c $(or $(BENCH_CONFIG),release) --product distribution-service
	$(SWIFT) build -c $(or $(BENCH_CONFIG),release) --product submission-service
	CONFIG=$(or $(BENCH_CONFIG),release) deploy/local/bench-peak.sh

bench-distribution: ## Time full distribution runs over 100k and 1.4M synthetic keys (release; BENCH_KEYS to change)
	$(SWIFT) build -c release --product distribution-service
	$(SWIFT) build -c release --product submission-service
	deploy/local/bench-distribution.sh

deploy-check: ## Validate deploy/ statically: compose, Kubernetes, Dockerfile, env examples, gateway, configurations (uses the built binaries)
	BIN_DIR="$${BIN_DIR:-.build/$(CONFIG)}" deploy/check/run.sh

clean: ## Remove build folders (keeps .data/)
	rm -rf .build .build-protoc
