#!/usr/bin/env python3
"""The sample outputs in the README and "How grading works", made from a real run.

    python3 scripts/samples.py update   grade the scenario, rewrite the samples in the docs
    python3 scripts/samples.py check    grade the scenario, fail if a sample differs

The scenario is a learner in the middle of Chapter 1: 1.1 solved, 1.2 resuming only on
`.success` (a catalogued mistake), a typo in 1.5, the rest as shipped. It is graded by the
real runner (Runner/.build/debug/workbook, which make builds) in a copy of the workbook
under .build-samples/, so the learner's own files and progress are never touched.

Each sample is the ```text block that follows an anchor line in a document (SAMPLES
below). The output is shortened the same way every time: only the exercises a sample
keeps, "…" for each run of the others, test-file line numbers as ":…" (they move with
every test edit), and a crash's list of running tests cut after the first (a crash is
left out of the samples all the same: which tests were running when it came varies). `make test`
runs `check`, so a sample cannot drift from what the runner prints.
"""

import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, ".build-samples")
TREE = os.path.join(WORK, "tree")
RUNNER = os.path.join(ROOT, "Runner", ".build", "debug", "workbook")

# (document, anchor line, the command line shown first or None, exercises kept)
SAMPLES = [
    # 1.6's crash is left out: which of its tests were running when it crashed varies.
    ("README.md", "Here is a real run:", "$ make check CHAPTER=1", ["1.1", "1.2", "1.3", "1.5"]),
    (
        "docs/Workbook.docc/HowGradingWorks.md",
        "A check in the middle of Chapter 1 looks like this:",
        None,
        ["1.1", "1.2", "1.3", "1.5"],
    ),
]


def die(message):
    print(f"samples.py: {message}", file=sys.stderr)
    sys.exit(1)


def sync(source, target):
    """Makes `target` a copy of `source`, writing only files whose content differs (so the
    build folder stays warm between runs) and removing files `source` no longer has."""
    wanted = set()
    for folder, _, files in os.walk(source):
        for name in files:
            relative = os.path.relpath(os.path.join(folder, name), source)
            wanted.add(relative)
            source_file, target_file = os.path.join(source, relative), os.path.join(target, relative)
            with open(source_file, "rb") as handle:
                content = handle.read()
            if os.path.exists(target_file):
                with open(target_file, "rb") as handle:
                    if handle.read() == content:
                        continue
            os.makedirs(os.path.dirname(target_file), exist_ok=True)
            with open(target_file, "wb") as handle:
                handle.write(content)
    for folder, _, files in os.walk(target):
        for name in files:
            path = os.path.join(folder, name)
            if os.path.relpath(path, target) not in wanted:
                os.remove(path)


def prepare():
    """A copy of the workbook's package with the scenario's files in Chapters/."""
    os.makedirs(TREE, exist_ok=True)
    for name in ["Package.swift", "workbook.json", "Support", "Tests", "Chapters", "Solutions"]:
        source, target = os.path.join(ROOT, name), os.path.join(TREE, name)
        if os.path.isdir(source):
            sync(source, target)
        else:
            shutil.copy2(source, target)
    chapter = os.path.join(TREE, "Chapters", "01-Callbacks")
    solutions = os.path.join(TREE, "Solutions", "01-Callbacks")
    shutil.copy2(os.path.join(solutions, "01-WarmUp.swift"), chapter)
    # 1.2: the solution with the catalogued mistake applied.
    shutil.copy2(os.path.join(solutions, "02-ResultCallback.swift"), chapter)
    patch = os.path.join(ROOT, "Mistakes", "01-Callbacks", "1.2-resumes-only-on-success.patch")
    with open(patch, encoding="utf-8") as handle:
        text = handle.read().replace("Solutions/01-Callbacks/", "")
    result = subprocess.run(
        ["patch", "--silent", "-p0", "-d", chapter], input=text, text=True, capture_output=True
    )
    if result.returncode != 0:
        die(f"the 1.2 mistake does not apply: {result.stdout}{result.stderr}")
    # 1.5: a half-written answer with a typo.
    path = os.path.join(chapter, "05-KeepBothAPIs.swift")
    with open(os.path.join(ROOT, "Chapters", "01-Callbacks", "05-KeepBothAPIs.swift"), encoding="utf-8") as handle:
        text = handle.read()
    placeholder = "    throw AsyncTwinNotWritten()\n"
    if placeholder not in text:
        die("05-KeepBothAPIs.swift's starter changed: update the scenario in scripts/samples.py")
    typo = (
        "    try await withCheckedThrowingContinuation { continuation in\n"
        "      currentReading(for: cty) { result in continuation.resume(with: result) }\n"
        "    }\n"
    )
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace(placeholder, typo))


def grade():
    if not os.access(RUNNER, os.X_OK):
        die(f"no runner at {RUNNER}: run `make Runner/.build/debug/workbook` first")
    environment = dict(os.environ, NO_COLOR="1")
    for name in ["WORKBOOK_LONG_TESTS", "WORKBOOK_SKIP_FILES", "WORKBOOK_SOURCE", "WORKBOOK_CHAPTER"]:
        environment.pop(name, None)
    result = subprocess.run(
        [RUNNER, "check", "--chapter", "1", "--root", TREE],
        capture_output=True, text=True, env=environment,
    )
    if result.returncode not in (0, 1) or "\nProgress [" not in result.stdout:
        die(f"the check did not grade (exit {result.returncode}):\n{result.stdout}{result.stderr}")
    return result.stdout


EXERCISE_LINE = re.compile(r"^  \S (\d+\.\d+)  ")


def shorten(output, keep, command):
    lines = output.rstrip("\n").split("\n")
    # The chapter's lines end at the blank line before the summary.
    blank = lines.index("")
    header, body, summary = lines[0], lines[1:blank], lines[blank + 1:]
    blocks, current = [], None
    for line in body:
        match = EXERCISE_LINE.match(line)
        if match:
            current = [match.group(1), [line]]
            blocks.append(current)
        elif current is not None:
            current[1].append(line)
        # chapter notes before the first exercise are not part of any sample
    shown, skipping = [header], False
    for exercise, block in blocks:
        if exercise in keep:
            shown.extend(block)
            skipping = False
        elif not skipping:
            shown.append("  …")
            skipping = True
    text = "\n".join(shown + [""] + summary)
    text = re.sub(r"(Tests/[\w./-]+\.swift):\d+", r"\1:…", text)
    text = re.sub(r"(while running one of these tests: [^,\n]*\"),[^\n]*", r"\1, …", text)
    return (command + "\n" if command else "") + text + "\n"


def block_span(lines, anchor, document):
    """The line indexes of the ```text block's content after the anchor line."""
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith(anchor))
        fence = next(i for i in range(start, len(lines)) if lines[i].strip() == "```text")
        end = next(i for i in range(fence + 1, len(lines)) if lines[i].strip() == "```")
    except StopIteration:
        die(f"{document}: no ```text block after a line starting '{anchor}'")
    return fence + 1, end


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode not in ("update", "check"):
        print(__doc__.strip().split("\n\n")[0], file=sys.stderr)
        sys.exit(2)
    print("samples: grading the Chapter 1 scenario in .build-samples/…", file=sys.stderr)
    prepare()
    output = grade()
    drifted = []
    for document, anchor, command, keep in SAMPLES:
        path = os.path.join(ROOT, document)
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().split("\n")
        begin, end = block_span(lines, anchor, document)
        wanted = shorten(output, keep, command).rstrip("\n").split("\n")
        if lines[begin:end] == wanted:
            continue
        if mode == "check":
            drifted.append(document)
            print(f"samples: {document}: the sample after '{anchor}' differs from a real run:", file=sys.stderr)
            for line in wanted:
                print(f"  | {line}", file=sys.stderr)
        else:
            lines[begin:end] = wanted
            with open(path, "w", encoding="utf-8") as handle:
                handle.write("\n".join(lines))
            print(f"samples: rewrote the sample in {document}", file=sys.stderr)
    if drifted:
        die("run `python3 scripts/samples.py update` and review the change")
    print(f"samples: {len(SAMPLES)} samples match a real run", file=sys.stderr)


if __name__ == "__main__":
    main()
