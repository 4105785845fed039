#!/usr/bin/env bash
# Times the learner's feedback loop, for every exercise listed in workbook.json:
#
#   cold   `make check CHAPTER=1` on a fresh clone of the current commit: it builds the
#          grading runner and Chapter 1 (at once), then grades.        goal: ≤ 20 s
#          Then the same on another fresh clone with BUSY busy loops running (default 2,
#          one per core here), the figure a learner sees on a busy laptop: reported, no goal.
#   warm   with every solution copied into Chapters/ (a passing attempt runs every test),
#          for each exercise: a save of its file (a comment line added at the top, so the
#          file really compiles to something new), then `make check EXERCISE=N.K` until its
#          verdict is printed; RUNS rounds over the chapter's exercises.
#          goal: every exercise ≤ 5 s, the median over the exercises ≤ 2 s
#
# Everything happens in a scratch clone under $TMPDIR, removed at the end, so your own tree,
# build folders and progress are never touched. Only committed work is measured. Each
# chapter is built once before its exercises are timed (that build is not a save).
#
# Usage: scripts/bench-loop.sh [--runs N] [--chapter N] [--no-cold] [--busy N] [--raw FILE]
#   --runs N      rounds per chapter, so N timings per exercise (default 3)
#   --chapter N   only this chapter's exercises (repeatable); default: every chapter
#   --no-cold     skip the cold first checks (the warm timings still need a build)
#   --busy N      busy loops during the second cold check (default 2; 0 skips it)
#   --raw FILE    also write one line per timing to FILE, for `make bench`:
#                   cold SECONDS
#                   coldbusy SECONDS LOOPS
#                   warm ID SECONDS VERDICT
#                   load WHEN 1MIN 5MIN 15MIN
#                   commit HASH, date WHEN (of the clone measured)
# Prints a summary on stdout (each figure next to its goal), progress on stderr. `make
# bench-loop` runs it; `make bench` runs it too and puts the figures in RESULTS.md.
set -euo pipefail

runs=3
chapters=()
cold=1
raw=""
busy=2
while (($#)); do
  case "$1" in
    --runs) runs="${2:-}"; shift 2 ;;
    --chapter) chapters+=("${2:-}"); shift 2 ;;
    --no-cold) cold=0; shift ;;
    --busy) busy="${2:-}"; shift 2 ;;
    --raw) raw="${2:-}"; shift 2 ;;
    *) echo "bench-loop.sh: unknown argument '$1' (see the comment at the top)" >&2; exit 2 ;;
  esac
done
[[ "$busy" =~ ^[0-9]+$ ]] || { echo "bench-loop.sh: --busy needs a number, not '$busy'" >&2; exit 2; }
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "bench-loop.sh: --runs needs a positive number, not '$runs'" >&2; exit 2; }
for chapter in "${chapters[@]}"; do
  [[ "$chapter" =~ ^[0-9]+$ ]] || { echo "bench-loop.sh: --chapter needs a number, not '$chapter'" >&2; exit 2; }
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
commit="$(git -C "$root" rev-parse HEAD)"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/workbook-bench-loop.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
clone="$scratch/workbook"
timings="$scratch/timings.txt"
: > "$timings"

say() { echo "learner loop: $*" >&2; }
now() { date +%s.%N; }
since() { awk -v start="$1" -v end="$(now)" 'BEGIN { printf "%.3f\n", end - start }'; }
load() { echo "load $1 $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "? ? ?")" >> "$timings"; }

# The make that runs inside must not inherit this make's settings (MAKEFLAGS carries the
# command line's variables, such as QUICK=1).
inner_make() {
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u CHAPTER -u EXERCISE -u WORKBOOK_LONG_TESTS \
    NO_COLOR=1 make -C "$clone" "$@"
}

say "cloning ${commit:0:12} into $scratch"
git clone --quiet --no-checkout "$root" "$clone"
git -C "$clone" checkout --quiet --detach "$commit"
load start
echo "commit ${commit:0:12}" >> "$timings"
echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$timings"

# Times `make check CHAPTER=1` in the clone at $1; prints the seconds.
cold_check() {
  local start seconds
  start="$(now)"
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u CHAPTER -u EXERCISE -u WORKBOOK_LONG_TESTS \
    NO_COLOR=1 make -C "$1" check CHAPTER=1 > "$scratch/check.log" 2>&1 || true
  seconds="$(since "$start")"
  if ! grep -q "^Progress " "$scratch/check.log"; then
    echo "bench-loop.sh: make check CHAPTER=1 printed no verdicts; its output was:" >&2
    tail -n 30 "$scratch/check.log" >&2
    exit 1
  fi
  echo "$seconds"
}

if ((cold)); then
  say "cold make check CHAPTER=1 on the fresh clone (builds the runner and Chapter 1)"
  seconds="$(cold_check "$clone")" || exit 1
  echo "cold $seconds" >> "$timings"
  say "cold: $seconds s (goal ≤ 20 s)"
  if ((busy > 0)); then
    busy_clone="$scratch/busy"
    git clone --quiet --no-checkout "$root" "$busy_clone"
    git -C "$busy_clone" checkout --quiet --detach "$commit"
    say "cold make check CHAPTER=1 on another fresh clone, with $busy busy loops running"
    loops=()
    for ((i = 0; i < busy; i++)); do
      # Bounded: each loop ends after 10 minutes even if this script is killed.
      timeout 600 sh -c 'while :; do :; done' &
      loops+=($!)
    done
    seconds="$(cold_check "$busy_clone")" || { kill "${loops[@]}" 2>/dev/null; exit 1; }
    kill "${loops[@]}" 2>/dev/null
    wait "${loops[@]}" 2>/dev/null
    echo "coldbusy $seconds $busy" >> "$timings"
    say "cold with $busy busy loops: $seconds s"
    rm -rf "$busy_clone"
  fi
fi

# The exercises, from workbook.json: "chapter id file" per line, file relative to Chapters/.
python3 - "$clone/workbook.json" > "$scratch/exercises.txt" <<'EOF'
import json, sys
workbook = json.load(open(sys.argv[1], encoding="utf-8"))
for chapter in workbook["chapters"]:
    for exercise in chapter.get("exercises", []):
        print(chapter["number"], exercise["id"], chapter["folder"] + "/" + exercise["file"])
EOF
if ((${#chapters[@]})); then
  wanted=" ${chapters[*]} "
  awk -v wanted="$wanted" 'index(wanted, " " $1 " ")' "$scratch/exercises.txt" > "$scratch/chosen.txt"
  mv "$scratch/chosen.txt" "$scratch/exercises.txt"
fi
[[ -s "$scratch/exercises.txt" ]] || { echo "bench-loop.sh: no exercises chosen" >&2; exit 2; }

# A passing attempt everywhere: the solutions take the starters' places.
while read -r _ _ file; do
  cp "$clone/Solutions/$file" "$clone/Chapters/$file"
done < "$scratch/exercises.txt"

edits=0
for chapter in $(cut -d' ' -f1 "$scratch/exercises.txt" | uniq); do
  say "chapter $chapter: building it with the solutions in place (not timed)"
  inner_make check CHAPTER="$chapter" > "$scratch/check.log" 2>&1 || {
    echo "bench-loop.sh: with the solutions in place, make check CHAPTER=$chapter did not pass:" >&2
    tail -n 30 "$scratch/check.log" >&2
    exit 1
  }
  for round in $(seq 1 "$runs"); do
    while read -r number id file; do
      [[ "$number" == "$chapter" ]] || continue
      edits=$((edits + 1))
      sed -i "1i // bench: saved again ($edits)" "$clone/Chapters/$file"
      start="$(now)"
      status=0
      inner_make check EXERCISE="$id" > "$scratch/check.log" 2>&1 || status=$?
      seconds="$(since "$start")"
      verdict=passed
      if ((status != 0)); then
        verdict="$(grep -E "^ +[^ ]+ +${id//./\\.} " "$scratch/check.log" | head -n 1 \
          | grep -oE "(passed|not started|failed|never resumed|crashed|does not compile)$" \
          | tr ' ' '-' || true)"
        verdict="${verdict:-error}"
      fi
      echo "warm $id $seconds $verdict" >> "$timings"
      say "$id round $round of $runs: $seconds s, $verdict"
    done < "$scratch/exercises.txt"
  done
done
load end

[[ -z "$raw" ]] || cp "$timings" "$raw"

# The summary: per exercise median and max, then the goals.
python3 - "$timings" "$runs" <<'EOF'
import statistics, sys
cold, coldbusy, warm, loads = [], [], {}, {}
failed = []
for line in open(sys.argv[1]):
    words = line.split()
    if words[0] == "cold":
        cold.append(float(words[1]))
    elif words[0] == "coldbusy":
        coldbusy.append((float(words[1]), words[2]))
    elif words[0] == "warm":
        warm.setdefault(words[1], []).append(float(words[2]))
        if words[3] != "passed":
            failed.append(f"{words[1]} ({words[3]})")
    elif words[0] == "load":
        loads[words[1]] = " ".join(words[2:])
ok = lambda met: "ok" if met else "MISSED"
print("The learner's loop: a save, then its verdict (make check EXERCISE=N.K), solution in place")
print(f"load average (1, 5, 15 min) at start {loads.get('start', '?')}; at end {loads.get('end', '?')}")
print(f"runs per exercise: {sys.argv[2]}")
print()
print(f"{'exercise':<9}{'median':>8}{'max':>8}   goal ≤ 5 s")
medians = {}
for id, samples in warm.items():
    medians[id] = statistics.median(samples)
    print(f"{id:<9}{medians[id]:>7.2f}s{max(samples):>7.2f}s   {ok(medians[id] <= 5)}")
print()
if medians:
    overall = statistics.median(medians.values())
    slowest = max(medians, key=medians.get)
    print(f"median over the {len(medians)} exercises: {overall:.2f} s   (goal ≤ 2 s: {ok(overall <= 2)})")
    print(f"slowest exercise: {slowest}, median {medians[slowest]:.2f} s   (goal ≤ 5 s: {ok(medians[slowest] <= 5)})")
    worst = max((s, id) for id, samples in warm.items() for s in samples)
    print(f"slowest single run: {worst[1]}, {worst[0]:.2f} s")
for seconds in cold:
    print(f"cold first make check CHAPTER=1 on a fresh clone: {seconds:.1f} s   (goal ≤ 20 s: {ok(seconds <= 20)})")
for seconds, loops in coldbusy:
    print(f"the same with {loops} busy loops running: {seconds:.1f} s   (no goal: what a busy machine costs)")
if failed:
    print(f"NOT PASSED (the timings above are not a passing attempt's): {', '.join(failed)}")
cores = None
try:
    import os
    cores = os.cpu_count()
except Exception:
    pass
start = loads.get("start", "").split()
if cores and start and start[0] != "?" and float(start[0]) > cores / 2:
    print(f"note: the machine was busy ({start[0]} runnable on {cores} cores at the start); "
          "the figures are slower than on a quiet machine")
EOF
