# One command runner. `make run` and `make test` set up .venv on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: run demo test test-fast lint bench bench-intake bench-seal bench-judge bench-tlog bench-proofs bench-proxy bench-litellm bench-ranking bench-failover bench-wrk bench-accuracy bench-bounds bench-servers bench-tiles bench-mirror bench-portable schemas vectors ops-tools clean client-wheel

$(STAMP): pyproject.toml
	@echo "installing into $(VENV) (first run only, about a minute)…"
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --upgrade pip
	@$(BIN)/python -m pip install -q -e '.[dev]'
	@rm -f $(VENV)/.installed-* && touch $@

PORT ?= 8080
OPS_PORT ?= 9464
DEMO_HOME ?= .bureau-demo

run: $(STAMP)            ## the service on the embedded database under ./.bureau, one process per core (up to 8); PORT=, OPS_PORT=
	$(BIN)/bureau serve --port $(PORT) --ops-port $(OPS_PORT)

demo: $(STAMP)           ## a bureau with 30-second epochs under ./.bureau-demo: reports within a minute
	@echo "in another shell, to use this bureau's ledger and admin key:"
	@echo "  export BUREAU_HOME=$(abspath $(DEMO_HOME))"
	BUREAU_HOME=$(DEMO_HOME) BUREAU_EPOCH_SECONDS=30 $(BIN)/bureau serve --port $(PORT) --ops-port $(OPS_PORT)

# Every test runs in parallel over the cores (pytest-xdist; TEST_WORKERS=1 runs them in
# this one process), each worker with its own PostgreSQL, databases and ports. The output
# ends with the slowest tests (--durations) and the slowest files (tests/conftest.py).
TEST_WORKERS ?= auto
PYTEST := $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal --durations=20

test: $(STAMP)           ## the whole test suite (real PostgreSQL, real HTTP), in parallel
	$(PYTEST)

test-fast: $(STAMP)      ## the edit-run loop: skips the multi-process, crash and third-party-server tests
	$(PYTEST) -m "not slow and not thirdparty"

lint: $(STAMP)
	$(BIN)/ruff check bureau reporters tests bench ops
	$(BIN)/mypy bureau reporters

bench: bench-intake bench-seal bench-judge bench-proxy

bench-intake: $(STAMP)
	$(BIN)/python bench/intake_bench.py

bench-seal: $(STAMP)
	$(BIN)/python bench/seal_bench.py

bench-tlog: $(STAMP)     ## the Merkle tree alone: appends, proofs from stored nodes
	$(BIN)/python bench/tlog_bench.py

bench-proofs: $(STAMP)   ## proof routes over HTTP at a million entries (p99 < 5 ms)
	$(BIN)/python bench/proof_bench.py

bench-tiles: $(STAMP)    ## tlog-tiles at a million entries: reads from the bureau (p99 < 2 ms), proofs from the mirror (fetches, 0 queries)
	$(BIN)/python bench/tiles_bench.py

bench-mirror: $(STAMP)   ## the static mirror current after a seal of 10,000 new entries (target 2 s)
	$(BIN)/python bench/mirror_bench.py

bench-portable: $(STAMP) ## proof bundles and cards of the accuracy population: verify < 5 ms, card <= 4 KB
	$(BIN)/python bench/portable_bench.py

bench-proxy: $(STAMP)
	$(BIN)/python bench/proxy_bench.py

bench-litellm: $(STAMP)  ## a LiteLLM call with the bureau stopped and the spool full, beside the bureau up
	$(BIN)/python bench/litellm_bench.py

bench-ranking: $(STAMP)  ## the home page's ranked list: an epoch's read, pages and searches
	$(BIN)/python bench/ranking_bench.py

bench-failover: $(STAMP) ## kill -9 of the primary to the first accepted envelope, pg_auto_failover on loopback
	$(BIN)/python bench/failover_bench.py

bench-accuracy: $(STAMP) ## scores against the truth: every policy, the anchors, the ceiling, per coverage
	$(BIN)/python bench/accuracy_bench.py

bench-wrk: $(STAMP)      ## single POSTs driven by wrk beside a bare aiohttp handler, in one run
	$(BIN)/python bench/wrk_bench.py

bench-bounds: $(STAMP)   ## honest requests during abusive ones at each door (issue 35): p99 ratios
	$(BIN)/python bench/bounds_bench.py

bench-servers: $(STAMP)  ## GET /v0/servers at 10 and 10,000 linked agents, and a fact POST beside it
	$(BIN)/python bench/servers_bench.py

bench-judge: $(STAMP)    ## the committer's CPU per envelope, in memory (no database)
	$(BIN)/python bench/judge_bench.py

schemas: $(STAMP)        ## regenerate schemas/ from the pydantic models
	$(BIN)/python -m bureau.http.openapi --write-schemas

vectors: $(STAMP)        ## regenerate tests/vectors (only when the wire format changes on purpose)
	$(BIN)/python ops/make_vectors.py

client-wheel: $(STAMP)  ## the client library alone (client/pyproject.toml) as a wheel in dist/
	$(BIN)/python -m pip wheel -q --no-deps -w dist ./client

ops-tools: $(STAMP)      ## hadolint and the Compose Specification's schema, for tests/ops (ops/tools.txt)
	$(BIN)/python ops/fetch_tools.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
