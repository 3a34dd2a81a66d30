# Benchmarks (see BENCHMARKS.md). Everything runs on 127.0.0.1 against the
# Slack fake; the Bolt baseline needs Node (>= 20) and npm.
#
#   make bench                  full run, about 20 minutes, report on stdout
#                               and in bench/results/latest.md
#   make bench BENCH_OLD_BIN=F  the same with the A/B against the build F
#   make bench-old REV=4157d53  builds that revision's slackask into
#                               bench/results/slackask-REV for BENCH_OLD_BIN
#   make bench-callgrind        instructions per envelope only (valgrind)
#   BENCH_QUICK=1 make bench    smoke run, about two minutes
#
# BENCH_ONLY, BENCH_PPROF, BENCH_MAX_LOAD and the other knobs are documented
# in bench/main.go.

BOLT_DIR := bench/bolt

.PHONY: bench bench-deps bench-old bench-callgrind

export BENCH_OLD_BIN

bench: bench-deps
	go run ./bench

bench-callgrind:
	BENCH_ONLY=callgrind go run ./bench

# A slackask build of another revision, from a temporary git worktree.
REV ?= HEAD
bench-old:
	@set -e; dir=$$(mktemp -d); \
	git worktree add --detach $$dir $(REV) >/dev/null; \
	mkdir -p bench/results; \
	(cd $$dir && go build -o $(CURDIR)/bench/results/slackask-$(REV) ./cmd/slackask) || { git worktree remove --force $$dir; exit 1; }; \
	git worktree remove --force $$dir; \
	echo "built bench/results/slackask-$(REV): make bench BENCH_OLD_BIN=bench/results/slackask-$(REV)"

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
