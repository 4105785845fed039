#!/usr/bin/env bash
# Times the learner's feedback loop, for `make bench` (Benchmarks/, the bench executable
# runs this and puts the figures in its table):
#
#   cold   `make check CHAPTER=1` on a fresh clone of the current commit: it builds the
#          grading runner and Chapter 1, then grades
#   warm   after appending a comment to one Chapter 1 starter, the time until
#          `make check CHAPTER=1` has printed its verdicts; the file is restored after
#          each run, RUNS runs (default 5)
#
# Everything happens in a scratch clone under $TMPDIR, removed at the end, so the learner's
# own tree, build folders and progress are never touched. Only committed work is measured.
#
# Usage: scripts/bench-loop.sh [RUNS]
# Prints "cold SECONDS" once and "warm SECONDS" RUNS times on stdout; progress on stderr.
set -euo pipefail

runs="${1:-5}"
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "bench-loop.sh: RUNS must be a positive number, not '$runs'" >&2; exit 2; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
commit="$(git -C "$root" rev-parse HEAD)"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/workbook-bench-loop.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
clone="$scratch/workbook"
touched="Chapters/01-Callbacks/01-WarmUp.swift"

say() { echo "learner loop: $*" >&2; }
now() { date +%s.%N; }
since() { awk -v start="$1" -v end="$(now)" 'BEGIN { printf "%.3f\n", end - start }'; }

# The make that runs inside must not inherit this make's settings (MAKEFLAGS carries the
# command line's variables, such as QUICK=1).
check() {
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL NO_COLOR=1 \
    make -C "$clone" check CHAPTER=1 > "$scratch/check.log" 2>&1 || true
  # The starters fail as shipped, so make's status says nothing; the verdicts must be there.
  if ! grep -q "^Progress " "$scratch/check.log"; then
    echo "bench-loop.sh: make check CHAPTER=1 printed no verdicts; its output was:" >&2
    tail -n 30 "$scratch/check.log" >&2
    exit 1
  fi
}

say "cloning ${commit:0:12} into $scratch"
git clone --quiet --no-checkout "$root" "$clone"
git -C "$clone" checkout --quiet --detach "$commit"
[[ -f "$clone/$touched" ]] || { echo "bench-loop.sh: $touched is not in the commit" >&2; exit 1; }

say "cold make check CHAPTER=1 on the fresh clone (builds the runner and Chapter 1; minutes)"
start="$(now)"
check
echo "cold $(since "$start")"

for run in $(seq 1 "$runs"); do
  say "touching $touched, then make check CHAPTER=1 (run $run of $runs)"
  printf '\n// bench: touched, run %s\n' "$run" >> "$clone/$touched"
  start="$(now)"
  check
  echo "warm $(since "$start")"
  git -C "$clone" checkout --quiet -- "$touched"
done
