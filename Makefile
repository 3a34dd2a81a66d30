# Benchmarks (see BENCHMARKS.md). Everything runs on 127.0.0.1 against the
# Slack fake; the Bolt baseline needs Node (>= 20) and npm.
#
#   make bench                  full run, about 15 minutes, report on stdout
#                               and in bench/results/latest.md
#   BENCH_QUICK=1 make bench    smoke run, about a minute
#
# BENCH_ONLY, BENCH_PPROF, BENCH_MAX_LOAD and the other knobs are documented
# in bench/main.go.

BOLT_DIR := bench/bolt

.PHONY: bench bench-deps

bench: bench-deps
	go run ./bench

# Installs @slack/bolt for the Bolt baseline (bench/bolt/node_modules is not
# in git). Without npm the benchmark runs and reports Bolt as n/a.
bench-deps:
	@if command -v npm >/dev/null 2>&1; then \
		if [ ! -d $(BOLT_DIR)/node_modules/@slack/bolt ] || [ $(BOLT_DIR)/package-lock.json -nt $(BOLT_DIR)/node_modules ]; then \
			cd $(BOLT_DIR) && npm install --no-audit --no-fund; \
		fi; \
	else \
		echo "npm not found: the Bolt baseline will be skipped"; \
	fi
