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
#                     of the site with planted problems; then scripts/samples.py check:
#                     the sample printouts in the docs are what the runner prints
#   5. tsan           scripts/tsan.sh: the solutions' tests (every chapter and the support
#                     modules') under Thread Sanitizer, in .build-tsan; fails on any report
#   6. verify         workbook verify: metadata, solutions pass, starters get their verdicts
# It stops at the first stage that fails and exits non-zero. Each stage ends with the time it
# took; verify's closing line, "verify: N passed, 0 failed", is the last count printed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

# Each stage's heading, and the time the stage before it took (SECONDS is bash's clock).
stage_started=$SECONDS
stage_name=""
bold=$'\033[1m' plain=$'\033[0m'
[[ -t 1 && -z "${NO_COLOR:-}" ]] || bold="" plain=""
finish_stage() {
  [[ -z "$stage_name" ]] || printf '%s: %d s\n' "$stage_name" $((SECONDS - stage_started))
}
stage() {
  finish_stage
  stage_name="${1%% (*}"
  stage_started=$SECONDS
  printf '\n%s==> %s%s\n' "$bold" "$1" "$plain"
}
fail() {
  echo "test.sh: stage \"$1\" failed after $((SECONDS - stage_started)) s" >&2
  exit 1
}

stage "1/6 lint (swift format lint --strict)"
# Everything but Chapters/ as it is; Chapters/ as committed, since a learner's work in
# progress there is theirs to format (files not committed yet are linted as they are).
lint() { swift format lint --strict --recursive --parallel --configuration "$root/.swift-format" "$@"; }
lint $(make -s print-lint-paths | tr ' ' '\n' | grep -v '^Chapters$') || fail lint
if git rev-parse --verify --quiet HEAD >/dev/null 2>&1; then
  committed="$(mktemp -d)"
  git archive HEAD Chapters | tar -x -C "$committed"
  git ls-files --others --exclude-standard -z Chapters | xargs -0 -r cp --parents -t "$committed"
  (cd "$committed" && lint Chapters) || { rm -rf "$committed"; fail lint; }
  rm -rf "$committed"
  echo "lint: clean (Chapters/ as committed)"
else
  echo "lint: not a git checkout, so Chapters/ is linted as it is"
  lint Chapters || fail lint
  echo "lint: clean"
fi

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
  # The sample printouts in the README and "How grading works" against a real run.
  python3 scripts/samples.py check || fail "docs (samples)"
else
  echo "skipped: scripts/docs.sh is not here yet"
fi

stage "5/6 tsan (the solutions' tests under Thread Sanitizer)"
scripts/tsan.sh || fail tsan

stage "6/6 verify (solutions pass, starters fail as expected)"
make -s Runner/.build/debug/workbook
verify_log="$(mktemp)"
trap 'rm -f "$verify_log" "${log:-}"' EXIT
status=0
Runner/.build/debug/workbook verify | tee "$verify_log" || status=${PIPESTATUS[0]}
echo "6/6 verify: $((SECONDS - stage_started)) s; make test: $((SECONDS / 60)) min $((SECONDS % 60)) s in all"
# verify's closing count ("verify: N passed, M failed") again, so it is the last line.
grep -E '^verify: [0-9]+ passed, [0-9]+ failed$' "$verify_log" | tail -n 1
exit "$status"
