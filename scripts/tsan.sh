#!/usr/bin/env bash
# Runs the solutions' tests (every chapter, and the support modules' own tests) under
# Thread Sanitizer, and fails on any report.
#
#   scripts/tsan.sh            build in .build-tsan (only what changed), then run the tests
#
# `make tsan` and `make test` call this script. It works from any directory.
#
# It fails when the build fails, when a test fails, or when ThreadSanitizer reports
# anything: in the test process, or in a child process such as an exit test's (whose
# output Swift Testing keeps to itself). Every process writes its reports to a file of its
# own (TSAN_OPTIONS log_path), and the script prints them all. Known false positives in the
# toolchain's own libraries are suppressed in scripts/tsan-suppressions.txt, one commented
# entry each; races in the workbook's code are fixed, never suppressed.
#
# Tests that cannot work under the sanitizer check WORKBOOK_TSAN, which this script sets,
# and say why they skip.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

scratch="$root/.build-tsan"
suppressions="$root/scripts/tsan-suppressions.txt"
reports="$scratch/tsan-reports"
build_log="$scratch/tsan-build.log"
test_log="$scratch/tsan-test.log"

die() {
  echo "tsan: $*" >&2
  exit 1
}

[[ -f "$suppressions" ]] || die "$suppressions is missing; restore it from git."
mkdir -p "$scratch"
rm -rf "$reports"
mkdir -p "$reports"

export WORKBOOK_SOURCE=solutions
unset WORKBOOK_CHAPTER
export WORKBOOK_TSAN=1

started=$SECONDS

# Mutex's contended path is invisible to the sanitizer on Linux; scripts/tsan/
# MutexAnnotations.c (read it for why) is linked into the test binary to show it. Compiled
# with the toolchain's own clang, and only when it changed; a new object forces a new link.
annotations_source="$root/scripts/tsan/MutexAnnotations.c"
annotations="$scratch/tsan-mutex-annotations.o"
linker_flags=()
if [[ "$(uname -s)" == Linux ]]; then
  swift_path="$(command -v swift)" || die "swift is not on PATH; install the Swift 6.3 toolchain."
  clang="$(dirname "$(readlink -f "$swift_path")")/clang"
  [[ -x "$clang" ]] || clang="$(command -v clang)" \
    || die "no clang next to swift or on PATH; the Swift toolchain ships one, reinstall it."
  if [[ ! -f "$annotations" || "$annotations_source" -nt "$annotations" ]]; then
    "$clang" -fsanitize=thread -fPIC -O1 -g -Wall -Werror -c "$annotations_source" \
      -o "$annotations" || die "compiling $annotations_source failed (above)."
    rm -f "$scratch"/*/debug/WorkbookPackageTests.xctest
  fi
  linker_flags=(-Xlinker "$annotations")
fi

echo "tsan: building the solutions and every test target with -sanitize=thread in .build-tsan…"
if ! swift build --build-tests --sanitize=thread --scratch-path "$scratch" \
  "${linker_flags[@]+"${linker_flags[@]}"}" >"$build_log" 2>&1; then
  cat "$build_log"
  die "the build failed (see above); fix it, then run \`make tsan\` again."
fi
built=$SECONDS
echo "tsan: built in $((built - started)) s; running the tests…"

# halt_on_error=0: report every race, not just the first. exitcode: a process that
# reported anything exits with 66 (the tests' own failures exit with 1).
# log_path: each process (the test runner, and every exit test's child) writes its reports
# to tsan-reports/report.PID instead of its standard error.
export TSAN_OPTIONS="halt_on_error=0 exitcode=66 second_deadlock_stack=1 history_size=4 log_path=$reports/report suppressions=$suppressions${TSAN_OPTIONS:+ $TSAN_OPTIONS}"

status=0
# One test at a time: the sanitizer slows everything down several times over, and with every
# test running at once on two cores, the tests' two-second deadlines would pass for tests
# that are merely waiting for a core.
# A temporary folder of the run's own (the runner gives each graded run one too): files the
# tests leave behind go with it, and never pile up in the machine's.
test_tmp="$(mktemp -d "${TMPDIR:-/tmp}/workbook-tsan-tmp.XXXXXX")"
trap 'rm -rf "$test_tmp"' EXIT
TMPDIR="$test_tmp/" swift test --skip-build --sanitize=thread --disable-xctest --no-parallel \
  --scratch-path "$scratch" >"$test_log" 2>&1 || status=$?
finished=$SECONDS

# Reports that reached the output anyway (a process that ignored log_path).
warnings_in_output=$(grep -c "WARNING: ThreadSanitizer" "$test_log" || true)
report_files=()
for file in "$reports"/report.*; do
  [[ -e "$file" ]] && report_files+=("$file")
done
reported=$warnings_in_output
for file in "${report_files[@]+"${report_files[@]}"}"; do
  count=$(grep -c "WARNING: ThreadSanitizer" "$file" || true)
  reported=$((reported + count))
done

summary=$(grep -E "^.{0,4}Test run with [0-9]+ tests?" "$test_log" | tail -1 || true)
[[ -n "$summary" ]] && echo "$summary"

if ((reported > 0)) || ((${#report_files[@]} > 0)) || ((warnings_in_output > 0)); then
  for file in "${report_files[@]+"${report_files[@]}"}"; do
    echo
    echo "---- ThreadSanitizer, process ${file##*.} ----"
    # Swift symbols demangled, for stacks a person can read.
    swift demangle --simplified <"$file" 2>/dev/null || cat "$file"
  done
  if ((warnings_in_output > 0)); then
    echo
    echo "---- reports in the test output ----"
    grep -A 40 "WARNING: ThreadSanitizer" "$test_log" | swift demangle --simplified || true
  fi
  echo
  if ((status == 0)); then
    echo "tsan: the tests themselves passed; the reports alone fail this stage."
  else
    echo "tsan: the test process exited with status $status (66: the sanitizer reported)."
  fi
  die "ThreadSanitizer reported $reported problem(s) (above). Fix the race in Support/ or" \
    "Solutions/; suppress only a proven false positive inside the toolchain's libraries, in" \
    "scripts/tsan-suppressions.txt with a comment saying why."
fi

if ((status != 0)); then
  echo
  echo "tsan: the tests failed under ThreadSanitizer (exit status $status); what they said:"
  grep -E "✘|recorded an issue|Fatal error|Crash|error:" "$test_log" | head -60 || true
  echo "…"
  tail -20 "$test_log"
  die "see above, and the whole output in .build-tsan/tsan-test.log."
fi

echo "tsan: 0 reports; build $((built - started)) s, tests $((finished - built)) s"
