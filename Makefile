# The workbook's commands. `make help` lists them.
#
# Everything a learner does goes through the grading runner `workbook` (Runner/), which is
# built on first use and rebuilt only when its sources change.

SHELL := /bin/bash
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

RUNNER_SOURCES := Runner/Package.swift $(shell find Runner/Sources -name '*.swift' 2>/dev/null)
WORKBOOK := Runner/.build/debug/workbook
# swift format skips hidden folders such as .build when recursing.
LINT_PATHS := $(wildcard Package.swift Support Chapters Solutions Tests Runner Benchmarks docs/Listings)

# Optional selections: make check CHAPTER=1, make check EXERCISE=1.3, make hint EXERCISE=1.3
CHAPTER ?=
EXERCISE ?=
SELECT = $(if $(CHAPTER),--chapter $(CHAPTER)) $(if $(EXERCISE),--exercise $(EXERCISE))

.PHONY: help check hint reset watch status test tsan verify mistakes fingerprint lint print-lint-paths format docs docs-preview docs-check listings bench bench-loop clean server clipper

help: ## List the targets
	@echo "Swift Concurrency workbook"
	@echo
	@echo "  make check CHAPTER=1     grade chapter 1 (omit CHAPTER for every chapter; EXERCISE=1.3 for one)"
	@echo "  make hint EXERCISE=1.3   show the next hint for exercise 1.3 (ALL=1: every hint shown so far)"
	@echo "  make watch [CHAPTER=1]   re-grade whenever a file under Chapters/ changes"
	@echo "  make status [CHAPTER=1]  each exercise's last verdict, without grading"
	@echo "  make test                lint, runner and support tests, docs, tsan, verify (what CI runs)"
	@echo "  make tsan                the solutions' tests under Thread Sanitizer; fails on any report"
	@echo "  make verify              check metadata; solutions pass; starters fail as expected"
	@echo "  make mutate EXERCISE=1.2 mutants of a solution must fail its tests (CHAPTER=N, LIMIT=N, SURVIVORS=1, WRITE=1)"
	@echo "  make fingerprint         record the starters' digests in workbook.json"
	@echo "  make lint | format       swift format, checking or rewriting"
	@echo "  make docs | docs-preview render the DocC site to docs/site | serve it locally"
	@echo "  make docs-check          load every docs page in headless Chromium; fail on broken pages"
	@echo "  make listings            copy the code listings from docs/Listings into the docs"
	@echo "  make bench [QUICK=1]     benchmarks (release build): one table, saved to Benchmarks/RESULTS.md"
	@echo "  make bench-loop [RUNS=3] [CHAPTER=N]  time save → verdict for every exercise, and a cold first check"
	@echo "  make server [PORT=4000]  run the Chapter 8 chat server on 127.0.0.1 (PORT=0: any free port)"
	@echo "  make clipper NAME=alice PORT=4000  chat through that server with your Chapter 8 clipper"
	@echo "  make clean               remove build folders (keeps your progress)"

# The chapter that `make check` or `make watch` builds first: CHAPTER, the chapter of
# EXERCISE, or Chapter 1 when neither is given (only plain numbers; the runner explains
# anything else).
FIRST_CHAPTER = $(strip $(if $(filter check watch,$(or $(MAKECMDGOALS),$(.DEFAULT_GOAL))),\
  $(if $(CHAPTER),$(CHAPTER),$(if $(EXERCISE),$(firstword $(subst ., ,$(EXERCISE))),1))))

# Left out of the environment of the chapter's build, as the runner leaves them out
# (BuildRequest.volatileVariables in Runner/Sources/WorkbookCore/Building/BuildStep.swift): SwiftPM
# compiles the manifest again whenever the environment differs from its last build's.
BUILD_VOLATILE := MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES MAKE_TERMOUT MAKE_TERMERR \
  MAKE_RESTARTS CHAPTER EXERCISE ALL LIMIT WRITE QUICK RUNS NAME SOURCE PORT WORKBOOK_MAKE WORKBOOK_LONG_TESTS \
  WORKBOOK_EXPLAIN NO_COLOR OLDPWD PWD _ SHLVL COLUMNS LINES

# The runner binary: rebuilt only when a runner source is newer, with live progress
# (scripts/build-runner.sh). For `make check` and `make watch` on a fresh clone, the chapter
# to grade is built at the same time, so that the first check waits for the longer of the
# two builds rather than for both in turn.
$(WORKBOOK): $(RUNNER_SOURCES)
	@BUILD_VOLATILE='$(BUILD_VOLATILE)' scripts/build-runner.sh '$(FIRST_CHAPTER)'

check: $(WORKBOOK) ## Grade exercises
	@WORKBOOK_MAKE=1 $(WORKBOOK) check $(SELECT)

hint: $(WORKBOOK) ## Show the next hint
	@WORKBOOK_MAKE=1 $(WORKBOOK) hint $(EXERCISE) $(if $(ALL),--all)

reset: $(WORKBOOK) ## Put EXERCISE back as shipped (your version is kept in .workbook/backups/)
	@WORKBOOK_MAKE=1 $(WORKBOOK) reset $(EXERCISE)

watch: $(WORKBOOK) ## Re-grade on every save
	@WORKBOOK_MAKE=1 $(WORKBOOK) watch $(if $(CHAPTER),--chapter $(CHAPTER))

status: $(WORKBOOK) ## Last verdicts, without grading
	@WORKBOOK_MAKE=1 $(WORKBOOK) status $(if $(CHAPTER),--chapter $(CHAPTER)) || true

verify: $(WORKBOOK) ## Developer check
	@$(WORKBOOK) verify $(if $(CHAPTER),--chapter $(CHAPTER))

mistakes: $(WORKBOOK) ## Each mistake gets its verdict, each alternative passes
	@$(WORKBOOK) mistakes $(SELECT)

# WRITE=1 rewrites Mistakes/MUTATION.md for the graded exercises, keeping its reasons.
.PHONY: mutate
mutate: $(WORKBOOK) ## Mutants of the solutions: each must fail the tests or be explained
	@$(WORKBOOK) mutate $(SELECT) $(if $(LIMIT),--limit $(LIMIT)) $(if $(SURVIVORS),--survivors) $(if $(WRITE),--write-report)

fingerprint: $(WORKBOOK) ## Update starterDigest values
	@$(WORKBOOK) fingerprint

test: ## Everything CI runs
	@scripts/test.sh

tsan: ## The solutions' tests under Thread Sanitizer
	@scripts/tsan.sh

print-lint-paths:
	@echo $(LINT_PATHS)

lint: ## swift format lint --strict
	@swift format lint --strict --recursive --parallel $(LINT_PATHS)

format: ## swift format, in place
	@swift format format --in-place --recursive --parallel $(LINT_PATHS)

docs: ## Render the DocC site into docs/site
	@if [ -f scripts/docs.sh ]; then bash scripts/docs.sh build; \
	else echo "make docs: scripts/docs.sh is not here yet (it comes with the docs)" >&2; exit 1; fi

docs-preview: ## Serve the DocC site on 127.0.0.1
	@if [ -f scripts/docs.sh ]; then bash scripts/docs.sh preview; \
	else echo "make docs-preview: scripts/docs.sh is not here yet (it comes with the docs)" >&2; exit 1; fi

docs-check: ## Check the rendered site in headless Chromium
	@bash scripts/docs-check.sh

# The docs' Swift code comes from compiled files under docs/Listings; this rewrites the
# copies in the articles and the tutorial after a source changed (make docs checks them).
listings: ## Copy docs/Listings into the docs' code blocks
	@python3 scripts/listings.py sync

# The benchmarks are a package of their own (Benchmarks/), always built in release mode.
# One table on stdout, progress on stderr; a full run also rewrites Benchmarks/RESULTS.md.
# QUICK=1: fewer runs and no learner's loop (`make bench-loop` runs it alone), and
# RESULTS.md stays as it is.
QUICK ?=
bench: ## Build and run the benchmarks
	@mkdir -p Benchmarks/.build
	@echo "building the benchmarks in release mode…" >&2
	@swift build -c release --package-path Benchmarks > Benchmarks/.build/make-bench.log 2>&1 \
	  || { cat Benchmarks/.build/make-bench.log; echo "make: building the benchmarks failed (the log is above)" >&2; exit 1; }
	@Benchmarks/.build/release/bench --root "$(CURDIR)" \
	  $(if $(QUICK),--quick,--results Benchmarks/RESULTS.md)

# The learner's loop alone, without building the benchmark package: in a scratch clone of
# HEAD, the cold first `make check CHAPTER=1`, then for every exercise of workbook.json (or
# of CHAPTER) a save and `make check EXERCISE=N.K` with the solution in place, RUNS times
# (default 3). Prints each figure next to its goal; `make bench` runs the same and keeps
# the figures in Benchmarks/RESULTS.md.
# The timings are kept in Benchmarks/.build/loop-timings.txt: `Benchmarks/.build/release/bench
# --only loop --loop-from Benchmarks/.build/loop-timings.txt --append-to Benchmarks/RESULTS.md`
# adds them to RESULTS.md as a section of their own.
RUNS ?=
bench-loop: ## Time the learner's loop for every exercise
	@mkdir -p Benchmarks/.build
	@scripts/bench-loop.sh $(if $(RUNS),--runs $(RUNS)) $(if $(CHAPTER),--chapter $(CHAPTER)) \
	  --raw Benchmarks/.build/loop-timings.txt

# The Chapter 8 chat server (Support/ChatServerMain), built without any chapter module, in
# the support tests' build folder. Ctrl-C stops it.
PORT ?= 0
server: ## Run the chat server on 127.0.0.1
	@mkdir -p .build-support
	@if [ -t 2 ] && [ -z "$$NO_COLOR" ] && [ "$$TERM" != dumb ]; then tty=1; else tty=; fi; \
	  note="building the chat server (the first build takes about a minute)…"; \
	  if [ -n "$$tty" ]; then printf '%s' "$$note" >&2; else echo "$$note" >&2; fi; \
	  WORKBOOK_CHAPTER=0 swift build --scratch-path .build-support --product chat-server \
	  > .build-support/make-server.log 2>&1 \
	  || { [ -z "$$tty" ] || echo >&2; cat .build-support/make-server.log; echo "make: building the chat server failed" >&2; exit 1; }; \
	  [ -z "$$tty" ] || printf '\r\033[K' >&2; \
	  echo "built in $${SECONDS} s; starting it on 127.0.0.1:$(PORT)…" >&2
	@exec "$$(WORKBOOK_CHAPTER=0 swift build --scratch-path .build-support --show-bin-path)/chat-server" --port $(PORT)

# The Chapter 8 `clipper` command (Support/ClipperMain over your Chapters/08-Capstone, or
# the answers with SOURCE=solutions), in a build folder of its own. Give the server's port.
# It needs 8.1 to 8.5 only: the challenge, 8.6, may still be as shipped.
NAME ?=
SOURCE ?=
clipper: $(WORKBOOK) ## Chat through the server: make clipper NAME=alice PORT=4000
	@test -n "$(NAME)" || { echo "make: say who you are: make clipper NAME=alice PORT=4000" >&2; exit 2; }
	@test "$(PORT)" != 0 || { echo "make: give the server's port: make clipper NAME=$(NAME) PORT=4000" >&2; exit 2; }
	@mkdir -p .build-clipper
	@if [ "$(SOURCE)" != solutions ] && ! $(WORKBOOK) status --chapter 8 > .build-clipper/status.txt 2>&1 \
	  && grep -qE "8\.[1-5] .*not started" .build-clipper/status.txt; then \
	  echo "clipper: your Chapter 8 is not finished; these exercises are still as shipped:" >&2; \
	  grep -E "8\.[1-5] .*not started" .build-clipper/status.txt >&2; \
	  echo "finish them (make check CHAPTER=8 grades them), or run the reference client:" >&2; \
	  echo "  make clipper NAME=$(NAME) PORT=$(PORT) SOURCE=solutions" >&2; exit 2; fi
	@if [ -t 2 ] && [ -z "$$NO_COLOR" ] && [ "$$TERM" != dumb ]; then tty=1; else tty=; fi; \
	  note="building clipper (the first build takes about a minute)…"; \
	  if [ -n "$$tty" ]; then printf '%s' "$$note" >&2; else echo "$$note" >&2; fi; \
	  env $(addprefix -u ,$(BUILD_VOLATILE)) WORKBOOK_CHAPTER=8 WORKBOOK_SOURCE=$(SOURCE) \
	  swift build --scratch-path .build-clipper --product clipper > .build-clipper/make-clipper.log 2>&1 \
	  || { [ -z "$$tty" ] || echo >&2; cat .build-clipper/make-clipper.log; echo "make: building clipper failed" >&2; exit 1; }; \
	  [ -z "$$tty" ] || printf '\r\033[K' >&2; \
	  echo "built in $${SECONDS} s; connecting to 127.0.0.1:$(PORT)…" >&2
	@exec "$$(env $(addprefix -u ,$(BUILD_VOLATILE)) WORKBOOK_CHAPTER=8 WORKBOOK_SOURCE=$(SOURCE) \
	  swift build --scratch-path .build-clipper --show-bin-path)/clipper" "$(NAME)" --port $(PORT)

clean: ## Remove build folders; .workbook/ (your progress) stays
	@rm -rf .build .build-learner .build-solutions .build-variants .build-clipper .build-tsan Benchmarks/.build .build-support Runner/.build docs/site .build-docs
	@echo "removed .build, .build-learner, .build-solutions, .build-variants, .build-clipper, .build-tsan, Benchmarks/.build, .build-support, Runner/.build, docs/site, .build-docs"
