#!/usr/bin/env bash
# Builds the grading runner (Runner/.build/debug/workbook) for make, with live progress.
#
#   scripts/build-runner.sh [CHAPTER]
#
# With a chapter number, that chapter is built at the same time, exactly as the runner
# builds it (same scratch path and environment), so that the first check waits for the
# longer of the two builds rather than for both in turn. A chapter that does not compile
# is left for the runner to report; only a runner that does not build stops here.
#
# While the builds run, one line shows how far each is (SwiftPM's step counts and the
# module it is compiling), rewritten in place on a terminal; when stderr is not a terminal
# (a pipe, CI) a plain line every 10 seconds instead. BUILD_VOLATILE (from the Makefile)
# names the variables left out of the chapter build's environment, as the runner leaves
# them out, so SwiftPM reuses its compiled manifest.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
chapter="${1:-}"
mkdir -p Runner/.build
runner_log=Runner/.build/make-runner.log
chapter_log=.build-learner/make-first-build.log
: > "$runner_log"

first=0
[[ -x Runner/.build/debug/workbook ]] || first=1
if ((first)); then
  what="the grading runner"
  [[ -n "$chapter" ]] && what+=" and chapter $chapter"
  echo "first build of $what: it takes longest (about half a minute on a quiet machine," \
    "more on a busy one); later checks take a few seconds" >&2
else
  echo "building the grading runner (Runner/ changed)…" >&2
fi

prebuild=""
if [[ "$chapter" =~ ^[0-9]+$ ]]; then
  mkdir -p .build-learner
  : > "$chapter_log"
  unset_volatile=()
  for name in ${BUILD_VOLATILE:-} BUILD_VOLATILE WORKBOOK_SOURCE WORKBOOK_SKIP_FILES; do
    unset_volatile+=(-u "$name")
  done
  env "${unset_volatile[@]}" WORKBOOK_TESTS_ONLY=1 WORKBOOK_CHAPTER="$chapter" \
    swift build --build-tests --package-path "$root" --scratch-path "$root/.build-learner" \
    > "$chapter_log" 2>&1 &
  prebuild=$!
else
  chapter=""
fi

swift build --package-path Runner --product workbook > "$runner_log" 2>&1 &
runner=$!

# "45/120 Compiling WorkbookCore": SwiftPM's last step line in a log, shortened.
step() {
  grep -aoE '^\[[0-9]+/[0-9]+\] [A-Za-z]+( [A-Za-z0-9_-]+)?' "$1" 2>/dev/null | tail -n 1 \
    | sed -E 's/^\[([0-9]+\/[0-9]+)\] /\1 /'
}
alive() { [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; }

terminal=0
[[ -t 2 && "${TERM:-}" != dumb ]] && terminal=1
width="${COLUMNS:-}"
[[ "$width" =~ ^[0-9]+$ ]] || width="$(tput cols 2>/dev/null || echo 80)"
started=$SECONDS
last_plain=$SECONDS
while alive "$runner" || alive "$prebuild"; do
  line="building"
  runner_step="$(step "$runner_log")"
  alive "$runner" && line+=" · runner ${runner_step:-starting}"
  if [[ -n "$prebuild" ]] && alive "$prebuild"; then
    chapter_step="$(step "$chapter_log")"
    line+=" · chapter $chapter ${chapter_step:-starting}"
  fi
  line+=" · $((SECONDS - started)) s"
  if ((terminal)); then
    printf '\r\033[2K%s' "${line:0:$((width - 1))}" >&2
  elif ((SECONDS - last_plain >= 10)); then
    echo "$line" >&2
    last_plain=$SECONDS
  fi
  sleep 0.5
done
((terminal)) && printf '\r\033[2K' >&2

wait "$runner"
runner_status=$?
[[ -z "$prebuild" ]] || wait "$prebuild" || true
if ((runner_status != 0)); then
  cat "$runner_log" >&2
  echo "make: building the runner failed (the log is above, and in $runner_log)" >&2
  exit 1
fi
touch Runner/.build/debug/workbook
echo "built in $((SECONDS - started)) s" >&2
