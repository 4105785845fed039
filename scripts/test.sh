#!/usr/bin/env bash
# What `make test` (and CI, through .ci/run) runs, in stages:
#   1. lint           swift format lint --strict over the package, support, chapters, runner
#   2. runner tests   swift test --package-path Runner (unit and golden tests)
#   3. support tests  the support modules' own tests (CoroutineKitTests), built with
#                     WORKBOOK_CHAPTER=0 so that no chapter module is compiled
#   4. docs           scripts/docs.sh build: compiles the code listings under docs/Listings
#                     and checks the docs show them as they are, then DocC (fails on
#                     warnings); then scripts/docs-check.sh: every page loaded in headless
#                     Chromium (titles, internal links, images), and its self-test on a copy
#                     of the site with planted problems
#   5. tsan           scripts/tsan.sh: the solutions' tests (every chapter and the support
#                     modules') under Thread Sanitizer, in .build-tsan; fails on any report
#   6. verify         workbook verify: metadata, solutions pass, starters get their verdicts
# It stops at the first stage that fails and exits non-zero; on success the last line is
# verify's own closing line, "verify: N passed, 0 failed".
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

stage() { printf '\n\033[1m==> %s\033[0m\n' "$1"; }
[[ -t 1 && -z "${NO_COLOR:-}" ]] || stage() { printf '\n==> %s\n' "$1"; }
fail() {
  echo "test.sh: stage \"$1\" failed" >&2
  exit 1
}

stage "1/6 lint (swift format lint --strict)"
make -s lint || fail lint
echo "lint: clean"

stage "2/6 runner tests (swift test --package-path Runner)"
swift test --disable-xctest --package-path Runner || fail "runner tests"

stage "3/6 support tests (WORKBOOK_CHAPTER=0 swift test --scratch-path .build-support)"
WORKBOOK_CHAPTER=0 swift test --disable-xctest --scratch-path .build-support || fail "support tests"

stage "4/6 docs (build, then check in headless Chromium)"
if [[ -f scripts/docs.sh ]]; then
  log="$(mktemp)"
  trap 'rm -f "$log"' EXIT
  status=0
  bash scripts/docs.sh build 2>&1 | tee "$log" || status=$?
  [[ $status -eq 0 ]] || fail docs
  if grep -q "warning:" "$log"; then
    echo "docs: the build printed warnings" >&2
    fail docs
  fi
  bash scripts/docs-check.sh || fail "docs (docs-check)"
  bash scripts/docs-check.sh --self-test || fail "docs (docs-check self-test)"
else
  echo "skipped: scripts/docs.sh is not here yet"
fi

stage "5/6 tsan (the solutions' tests under Thread Sanitizer)"
scripts/tsan.sh || fail tsan

stage "6/6 verify (solutions pass, starters fail as expected)"
make -s Runner/.build/debug/workbook
exec Runner/.build/debug/workbook verify
