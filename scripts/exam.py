#!/usr/bin/env python3
"""Grades a blind examiner's wrong answers with the real runner, to find the survivors.

    python3 scripts/exam.py FOLDER [--chapter N] [--exercise ID] [--report FILE]
    python3 scripts/exam.py --merge FILE

`--merge` adds catalogue entries to workbook.json: FILE is JSON of the form
{"8.1": {"mistakes": [{name, source, verdict, phrase}], "alternatives": [{name, source}]}},
the survivors a fixer turned into catalogue entries; an entry whose source is already
listed replaces that entry's fields (a reworded phrase), and every source must exist.

FOLDER holds an examiner's patches (unified diffs against a solution, as in Mistakes/)
and index.tsv, one line per patch: `id <TAB> patch file <TAB> category <TAB> the cause a
verdict should name`. The category `alternative` marks a correct answer in another style.

The patches are graded as `workbook mistakes` grades the catalogue, in a copy of the
workbook under .build-exam/root-<folder name> whose workbook.json lists every patch as an
*alternative*: an alternative "passes" when every test passes. So a wrong answer that
passes is a survivor (the tests do not catch it), and a correct one that does not pass
was wrongly rejected. The report lists, per patch, what it expects and what the runner
said (its verdict and first details), so each verdict can be judged: does it name the
cause, or is it vague or misleading?

The examiner never reads the tests (see the developers' guide, "blind examiner"); this
script is how their work is counted without showing them the tests either.
"""

import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# WORKBOOK_RUNNER grades with another build of the runner (one under test, say).
RUNNER = os.environ.get("WORKBOOK_RUNNER") or os.path.join(
    ROOT, "Runner", ".build", "debug", "workbook")


def sync(source, target):
    """A copy of `source` at `target` that rewrites only changed files (builds stay warm)."""
    wanted = set()
    for folder, _, files in os.walk(source):
        for name in files:
            relative = os.path.relpath(os.path.join(folder, name), source)
            wanted.add(relative)
            origin, copy = os.path.join(source, relative), os.path.join(target, relative)
            with open(origin, "rb") as handle:
                content = handle.read()
            if os.path.exists(copy):
                with open(copy, "rb") as handle:
                    if handle.read() == content:
                        continue
            os.makedirs(os.path.dirname(copy), exist_ok=True)
            with open(copy, "wb") as handle:
                handle.write(content)
    for folder, _, files in os.walk(target):
        for name in files:
            path = os.path.join(folder, name)
            if os.path.relpath(path, target) not in wanted:
                os.remove(path)


def merge(path):
    with open(path, encoding="utf-8") as handle:
        additions = json.load(handle)
    workbook_path = os.path.join(ROOT, "workbook.json")
    with open(workbook_path, encoding="utf-8") as handle:
        workbook = json.load(handle)
    added = updated = 0
    for chapter in workbook["chapters"]:
        for exercise in chapter["exercises"]:
            extra = additions.pop(exercise["id"], None)
            if not extra:
                continue
            for kind in ("mistakes", "alternatives"):
                listed = {entry["source"] for entry in exercise.get(kind, [])}
                for entry in extra.get(kind, []):
                    if not os.path.isfile(os.path.join(ROOT, entry["source"])):
                        sys.exit(f"exam.py: {exercise['id']}: {entry['source']} does not exist")
                    if entry["source"] in listed:
                        # A merge file may also reword an entry already listed (a new phrase).
                        for existing in exercise[kind]:
                            if existing["source"] == entry["source"] and existing != entry:
                                existing.update(entry)
                                updated += 1
                        continue
                    exercise.setdefault(kind, []).append(entry)
                    added += 1
    if additions:
        sys.exit(f"exam.py: no such exercises: {', '.join(sorted(additions))}")
    with open(workbook_path, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(workbook, indent=2, ensure_ascii=False) + "\n")
    print(f"exam.py: added {added} and updated {updated} catalogue entries in workbook.json")


def main():
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--merge":
        merge(args[1])
        return
    if not args or args[0].startswith("-"):
        print(__doc__.strip().split("\n\n")[0], file=sys.stderr)
        sys.exit(2)
    folder = os.path.abspath(args[0])
    selection, report_path = [], None
    rest = args[1:]
    while rest:
        option = rest.pop(0)
        if option in ("--chapter", "--exercise") and rest:
            selection += [option, rest.pop(0)]
        elif option == "--report" and rest:
            report_path = rest.pop(0)
        else:
            sys.exit(f"exam.py: unknown argument {option}")
    index = []
    with open(os.path.join(folder, "index.tsv"), encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 4:
                sys.exit(f"exam.py: index.tsv line {number} has {len(fields)} fields, not 4")
            # The id may carry the examiner's own numbering ("1.8-01"): the exercise is its
            # leading N.K.
            exercise = re.match(r"\d+\.\d+", fields[0])
            if not exercise:
                sys.exit(f"exam.py: index.tsv line {number}: '{fields[0]}' names no exercise")
            index.append([exercise.group(0)] + fields[1:4])

    # A copy of its own per examiner's folder, so runs for two folders can go on at once.
    EXAM_ROOT = os.path.join(ROOT, ".build-exam", "root-" + os.path.basename(folder.rstrip("/")))
    os.makedirs(EXAM_ROOT, exist_ok=True)
    for name in ["Support", "Tests", "Solutions", "Chapters"]:
        sync(os.path.join(ROOT, name), os.path.join(EXAM_ROOT, name))
    shutil.copy2(os.path.join(ROOT, "Package.swift"), EXAM_ROOT)
    patches = os.path.join(EXAM_ROOT, "Exam")
    shutil.rmtree(patches, ignore_errors=True)
    os.makedirs(patches)
    with open(os.path.join(ROOT, "workbook.json"), encoding="utf-8") as handle:
        workbook = json.load(handle)
    workbook.pop("catalogue", None)
    by_id = {}
    for exercise_id, patch, category, cause in index:
        shutil.copy2(os.path.join(folder, patch), patches)
        by_id.setdefault(exercise_id, []).append({"name": patch, "source": f"Exam/{patch}"})
    for chapter in workbook["chapters"]:
        for exercise in chapter["exercises"]:
            exercise["mistakes"] = []
            exercise["alternatives"] = by_id.get(exercise["id"], [])
    with open(os.path.join(EXAM_ROOT, "workbook.json"), "w", encoding="utf-8") as handle:
        json.dump(workbook, handle, indent=2, ensure_ascii=False)

    environment = dict(os.environ, NO_COLOR="1")
    result = subprocess.run(
        [RUNNER, "mistakes", "--root", EXAM_ROOT] + selection,
        capture_output=True, text=True, env=environment,
    )
    # Each variant: its line and the indented details under it.
    outcomes, current = {}, None
    line_pattern = re.compile(r'^  (ok|FAIL)\s+(\S+) alternative "([^"]+)": (.*)$')
    for line in result.stdout.split("\n"):
        match = line_pattern.match(line)
        if match:
            current = match.group(3)
            outcomes[current] = {"status": match.group(1), "summary": match.group(4), "details": []}
        elif current and line.startswith("          "):
            outcomes[current]["details"].append(line.strip())
        else:
            current = None

    rows, survivors, rejected, caught = [], 0, 0, 0
    for exercise_id, patch, category, cause in index:
        outcome = outcomes.get(patch)
        if outcome is None:
            status = "not graded"
        elif category == "alternative":
            status = "passes (right)" if outcome["status"] == "ok" else "REJECTED"
            rejected += outcome["status"] != "ok"
        elif outcome["status"] == "ok":
            status = "SURVIVED"
            survivors += 1
        else:
            status = "caught"
            caught += 1
        said = "" if outcome is None else outcome["summary"]
        details = [] if outcome is None else outcome["details"][:4]
        rows.append((exercise_id, patch, category, cause, status, said, details))

    lines = []
    for exercise_id, patch, category, cause, status, said, details in rows:
        lines.append(f"{status:<15} {exercise_id:<5} {patch}  [{category}]")
        lines.append(f"    expected cause: {cause}")
        if said:
            lines.append(f"    runner: {said}")
        for detail in details:
            lines.append(f"      {detail}")
    mistakes = sum(1 for row in rows if row[2] != "alternative")
    lines.append(
        f"exam: {mistakes} mistakes: {caught} caught, {survivors} survived; "
        f"{len(rows) - mistakes} alternatives, {rejected} rejected"
    )
    text = "\n".join(lines)
    print(text)
    if report_path:
        with open(report_path, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    if result.returncode not in (0, 1):
        print(result.stdout[-3000:], result.stderr[-3000:], file=sys.stderr)
        sys.exit(result.returncode)


if __name__ == "__main__":
    main()
