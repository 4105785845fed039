#!/usr/bin/env python3
"""Keeps the docs' Swift listings in step with Swift files that the build compiles.

Every ```swift block in docs/Workbook.docc/*.md is a copy of a region of a file under
docs/Listings/. The line just before the block names its source, and DocC does not render
it:

    <!-- listing: docs/Listings/Chapter01/Thermometer.swift#bridge -->
    ```swift
    ...
    ```

Without "#region" the block is the whole file. In a source file a region is marked like
this (marker lines never reach the docs, and the region is dedented):

    // listing: bridge          starts region "bridge" (regions may nest or overlap)
    // listing: end             ends the region opened last
    // listing: hide            hides the following lines from every region ...
    // listing: elide // …      ... or replaces them with one line, "// …" here
    // listing: show            ... until this line
    // listing: compile-with F.swift   typecheck this file together with F.swift, from the
                                       same folder (the tutorial's steps share one SDK file)
    // listing: legacy-groups G …      legacy code (Chapter 10): it must compile in the Swift 5
                                       mode, and fail in the Swift 6 mode with an error of each
                                       diagnostic group named ([#Group])

The DocC tutorial's code files are whole-file copies: docs/Listings/Tutorials/NAME.swift
becomes docs/Workbook.docc/Resources/NAME.swift (markers removed, hidden lines hidden).

    python3 scripts/listings.py sync        rewrite the blocks and copies from their sources
    python3 scripts/listings.py check       fail, naming each stale or unmarked block
    python3 scripts/listings.py typecheck   compile every source on its own (Swift 6 mode,
                                            warnings are errors) against the support modules

`make listings` runs sync; `scripts/docs.sh build` (so `make docs` and `make test`) runs
typecheck and check first.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "docs" / "Workbook.docc"
LISTINGS = ROOT / "docs" / "Listings"
TUTORIAL_SOURCES = LISTINGS / "Tutorials"
TUTORIAL_COPIES = CATALOG / "Resources"
SCRATCH = ROOT / ".build-support"
FIX = "run 'make listings' to rewrite them from their sources"

SOURCE_MARKER = re.compile(r"^\s*// listing: ?(.*?)\s*$")
DOC_MARKER = re.compile(r"^\s*<!-- listing: (\S+?)(?:#([\w.-]+))? -->\s*$")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
REGION_NAME = re.compile(r"^[\w.-]+$")


class ListingError(Exception):
    pass


def rel(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


@dataclass
class Source:
    """A listing source file, split into its regions."""

    path: Path
    whole: list[str] = field(default_factory=list)
    regions: dict[str, list[str]] = field(default_factory=dict)
    companions: list[Path] = field(default_factory=list)
    # The diagnostic groups a legacy listing's Swift 6 errors must show; None for a listing
    # that must compile in Swift 6.
    legacy_groups: list[str] | None = None

    @staticmethod
    def parse(path: Path) -> "Source":
        source = Source(path)
        open_regions: list[str] = []
        hidden = False
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            marker = SOURCE_MARKER.match(line)
            where = f"{rel(path)}:{number}"
            if marker is None:
                if not hidden:
                    source.whole.append(line)
                    for name in open_regions:
                        source.regions[name].append(line)
                continue
            word, _, rest = marker.group(1).partition(" ")
            if word == "end":
                if not open_regions:
                    raise ListingError(f"{where}: '// listing: end' without an open region")
                open_regions.pop()
            elif word == "hide" or word == "elide":
                if hidden:
                    raise ListingError(f"{where}: already hiding; close with '// listing: show'")
                hidden = True
                if word == "elide":
                    if not rest:
                        raise ListingError(f"{where}: say what to show, e.g. '// listing: elide // …'")
                    indent = line[: len(line) - len(line.lstrip())]
                    source.whole.append(indent + rest)
                    for name in open_regions:
                        source.regions[name].append(indent + rest)
            elif word == "compile-with":
                companion = path.parent / rest
                if not rest or "/" in rest or not companion.is_file() or companion == path:
                    raise ListingError(
                        f"{where}: compile-with needs another file in {rel(path.parent)}/, not '{rest}'"
                    )
                source.companions.append(companion)
            elif word == "legacy-groups":
                if not rest:
                    raise ListingError(f"{where}: name the groups its Swift 6 errors show, e.g. '// listing: legacy-groups MutableGlobalVariable'")
                source.legacy_groups = rest.split()
            elif word == "show":
                if not hidden:
                    raise ListingError(f"{where}: '// listing: show' without a hide or elide")
                hidden = False
            elif REGION_NAME.match(word) and not rest:
                if word in source.regions:
                    raise ListingError(f"{where}: region '{word}' is defined twice")
                source.regions[word] = []
                open_regions.append(word)
            else:
                raise ListingError(
                    f"{where}: unknown marker '{line.strip()}' (expected a region name, "
                    "end, hide, elide TEXT or show)"
                )
        if open_regions:
            raise ListingError(f"{rel(path)}: region '{open_regions[-1]}' has no '// listing: end'")
        if hidden:
            raise ListingError(f"{rel(path)}: a hide or elide has no '// listing: show'")
        return source

    def text(self, region: str | None) -> list[str]:
        lines = self.whole if region is None else self.regions[region]
        lines = [line.rstrip() for line in lines]
        while lines and not lines[0]:
            lines.pop(0)
        while lines and not lines[-1]:
            lines.pop()
        indents = [len(line) - len(line.lstrip()) for line in lines if line]
        cut = min(indents, default=0)
        return [line[cut:] for line in lines]


class Sources:
    def __init__(self) -> None:
        self.cache: dict[Path, Source] = {}
        self.used: set[tuple[Path, str | None]] = set()

    def get(self, path: Path) -> Source:
        if path not in self.cache:
            self.cache[path] = Source.parse(path)
        return self.cache[path]


@dataclass
class Block:
    """A ```swift block in an article, and what it should contain."""

    doc: Path
    line: int  # 1-based line of the opening fence
    indent: str
    body: list[str]  # the lines between the fences, as they are
    start: int  # index of the first body line
    end: int  # index of the closing fence
    marker: tuple[str, str | None] | None


def blocks(doc: Path, lines: list[str]) -> list[Block]:
    found = []
    index = 0
    while index < len(lines):
        fence = FENCE.match(lines[index])
        if fence is None:
            index += 1
            continue
        closing = index + 1
        while closing < len(lines) and not re.match(r"^\s*```\s*$", lines[closing]):
            closing += 1
        if closing == len(lines):
            raise ListingError(f"{rel(doc)}:{index + 1}: this code block is never closed")
        if fence.group(2) == "swift":
            marker = DOC_MARKER.match(lines[index - 1]) if index > 0 else None
            found.append(
                Block(
                    doc,
                    index + 1,
                    fence.group(1),
                    lines[index + 1 : closing],
                    index + 1,
                    closing,
                    (marker.group(1), marker.group(2)) if marker else None,
                )
            )
        index = closing + 1
    return found


def expected(block: Block, sources: Sources) -> list[str]:
    assert block.marker is not None
    path_text, region = block.marker
    where = f"{rel(block.doc)}:{block.line}"
    path = (ROOT / path_text).resolve()
    if not path.is_relative_to(LISTINGS) or path.suffix != ".swift":
        raise ListingError(f"{where}: the listing source must be a .swift file under docs/Listings/, not {path_text}")
    if not path.is_file():
        raise ListingError(f"{where}: the listing source {path_text} does not exist")
    source = sources.get(path)
    if region is not None and region not in source.regions:
        known = ", ".join(sorted(source.regions)) or "none"
        raise ListingError(f"{where}: {path_text} has no region '{region}' (its regions: {known})")
    sources.used.add((path, region))
    return [block.indent + line if line else "" for line in source.text(region)]


def tutorial_pairs() -> list[tuple[Path, Path]]:
    pairs = []
    for source in sorted(TUTORIAL_SOURCES.glob("*.swift")):
        pairs.append((source, TUTORIAL_COPIES / source.name))
    return pairs


def tutorial_copy(source: Path, sources: Sources) -> str:
    sources.used.add((source, None))
    return "\n".join(sources.get(source).text(None)) + "\n"


def run(write: bool) -> int:
    sources = Sources()
    problems: list[str] = []
    stale: list[str] = []
    rewritten = 0
    for doc in sorted(CATALOG.glob("**/*.md")):
        lines = doc.read_text(encoding="utf-8").split("\n")
        changed = False
        try:
            found = blocks(doc, lines)
        except ListingError as error:
            problems.append(str(error))
            continue
        doc_problems: list[str] = []
        doc_stale: list[str] = []
        for block in reversed(found):  # from the end, so earlier indices stay valid
            where = f"{rel(doc)}:{block.line}"
            if block.marker is None:
                doc_problems.append(
                    f"{where}: this ```swift block has no source; put its code in a file under "
                    "docs/Listings/ and write '<!-- listing: docs/Listings/DIR/FILE.swift#REGION -->' "
                    "on the line before the fence"
                )
                continue
            try:
                want = expected(block, sources)
            except ListingError as error:
                doc_problems.append(str(error))
                continue
            if want != block.body:
                path_text, region = block.marker
                name = path_text + (f"#{region}" if region else "")
                if write:
                    lines[block.start : block.end] = want
                    changed = True
                    rewritten += 1
                else:
                    doc_stale.append(f"{where}: the listing differs from {name}")
        problems.extend(reversed(doc_problems))
        stale.extend(reversed(doc_stale))
        if changed:
            doc.write_text("\n".join(lines), encoding="utf-8")

    pairs = tutorial_pairs()
    wanted_copies = {copy for _, copy in pairs}
    for source, copy in pairs:
        try:
            text = tutorial_copy(source, sources)
        except ListingError as error:
            problems.append(str(error))
            continue
        current = copy.read_text(encoding="utf-8") if copy.is_file() else None
        if current != text:
            if write:
                copy.parent.mkdir(parents=True, exist_ok=True)
                copy.write_text(text, encoding="utf-8")
                rewritten += 1
            else:
                what = "is missing" if current is None else "differs from its source"
                stale.append(f"{rel(copy)}: the tutorial's code file {what}, {rel(source)}")
    if TUTORIAL_COPIES.is_dir():
        for copy in sorted(TUTORIAL_COPIES.glob("*.swift")):
            if copy not in wanted_copies:
                problems.append(
                    f"{rel(copy)}: a tutorial code file with no source; write it as "
                    f"{rel(TUTORIAL_SOURCES / copy.name)} and run 'make listings'"
                )

    # Regions no article uses are dead text that nobody reviews; say so.
    for path in sorted(LISTINGS.glob("**/*.swift")):
        try:
            source = sources.get(path)
        except ListingError as error:
            problems.append(str(error))
            continue
        if path.parent == TUTORIAL_SOURCES:
            continue
        used = {region for used_path, region in sources.used if used_path == path}
        if not used:
            problems.append(f"{rel(path)}: no article shows this file; use it or delete it")
        for region in sorted(set(source.regions) - used):
            problems.append(f"{rel(path)}: no article shows its region '{region}'")

    for line in problems:
        print(f"listings: error: {line}", file=sys.stderr)
    if write:
        print(f"listings: rewrote {rewritten} listing(s); the others were up to date")
        return 1 if problems else 0
    for line in stale:
        print(f"listings: stale: {line}", file=sys.stderr)
    if stale:
        print(f"listings: {len(stale)} listing(s) are stale; {FIX}", file=sys.stderr)
    if problems or stale:
        return 1
    count = sum(1 for _ in CATALOG.glob("**/*.md"))
    print(f"listings: every ```swift block in {count} articles and {len(pairs)} tutorial file(s) matches its source")
    return 0


def support_modules() -> list[str]:
    """Builds the support modules (once; later runs are quick) and returns -I flags."""
    env = dict(os.environ, WORKBOOK_CHAPTER="0")
    env.pop("WORKBOOK_SOURCE", None)
    base = ["swift", "build", "--package-path", str(ROOT), "--scratch-path", str(SCRATCH)]
    SCRATCH.mkdir(exist_ok=True)
    log = SCRATCH / "listings-build.log"
    # With WORKBOOK_CHAPTER=0 the package holds only the support targets (LegacyKit,
    # CoroutineKit, ChatKit, WorkbookTesting, chat-server): one build makes every module a
    # listing may import, in the folder the support tests use, so `make test` builds it once.
    with open(log, "w", encoding="utf-8") as out:
        status = subprocess.run(base, env=env, stdout=out, stderr=subprocess.STDOUT)
    if status.returncode != 0:
        sys.stderr.write(log.read_text(encoding="utf-8"))
        raise ListingError(f"building the support modules failed (log above, in {rel(log)})")
    bin_path = subprocess.run(base + ["--show-bin-path"], env=env, capture_output=True, text=True, check=True)
    folder = Path(bin_path.stdout.strip())
    return ["-I", str(folder / "Modules"), "-I", str(folder)]


def typecheck() -> int:
    files = sorted(LISTINGS.glob("**/*.swift"))
    if not files:
        print("listings: no sources under docs/Listings/")
        return 0
    print("listings: building the support modules (WORKBOOK_CHAPTER=0, .build-support)…", flush=True)
    build_started = time.monotonic()
    try:
        includes = support_modules()
    except (ListingError, subprocess.CalledProcessError, FileNotFoundError) as error:
        print(f"listings: error: {error}", file=sys.stderr)
        return 1
    print(f"listings: support modules ready ({time.monotonic() - build_started:.1f} s)", flush=True)
    command = ["swiftc", "-typecheck", "-swift-version", "6", "-warnings-as-errors", "-module-name", "Listing"]
    if sys.platform == "darwin":
        # The package's platform is macOS 15 (Mutex needs it); Swift Testing lives in the
        # platform's developer frameworks, which swiftc does not search by default.
        platform = subprocess.run(
            ["xcrun", "--sdk", "macosx", "--show-sdk-platform-path"], capture_output=True, text=True
        ).stdout.strip()
        command = ["xcrun", "--sdk", "macosx"] + command
        command += ["-target", f"{os.uname().machine}-apple-macos15.0"]
        if platform:
            command += ["-F", f"{platform}/Developer/Library/Frameworks"]

    try:
        parsed = {path: Source.parse(path) for path in files}
        companions = {path: parsed[path].companions for path in files}
    except ListingError as error:
        print(f"listings: error: {error}", file=sys.stderr)
        return 1

    def compile_one(path: Path) -> tuple[Path, subprocess.CompletedProcess[str]]:
        inputs = [str(path)] + [str(other) for other in companions[path]]
        groups = parsed[path].legacy_groups
        if groups is None:
            done = subprocess.run(command + includes + inputs, capture_output=True, text=True, cwd=ROOT)
            return path, done
        # Legacy code: it compiled before Swift 6, and Swift 6 rejects it for the reasons named.
        # As a module's file, not a script: a script's globals belong to the main actor.
        swift5 = [word if word != "6" else "5" for word in command] + ["-parse-as-library"]
        done = subprocess.run(swift5 + includes + inputs, capture_output=True, text=True, cwd=ROOT)
        if done.returncode != 0:
            done.stdout = f"{rel(path)}: a legacy listing must compile in the Swift 5 mode:\n" + done.stdout
            return path, done
        # Past type checking too: errors about values that cross between tasks and actors
        # (region-based isolation) come from the SIL stage that -typecheck skips.
        six = [word if word != "-typecheck" else "-emit-sil" for word in command if word != "-warnings-as-errors"]
        six += ["-parse-as-library", "-o", os.devnull]
        done = subprocess.run(six + includes + inputs, capture_output=True, text=True, cwd=ROOT)
        output = done.stdout + done.stderr
        missing = [group for group in groups if f"[#{group}]" not in output]
        if done.returncode == 0 or missing:
            shown = ", ".join(f"[#{group}]" for group in missing) or "an error"
            done.returncode = 1
            done.stdout = f"{rel(path)}: a legacy listing must fail in the Swift 6 mode with {shown}:\n" + output
            done.stderr = ""
        else:
            done.returncode = 0
        return path, done

    started = time.monotonic()
    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for path, done in pool.map(compile_one, files):
            if done.returncode != 0:
                failed.append(path)
                sys.stderr.write(done.stdout + done.stderr)
    if failed:
        for path in failed:
            print(f"listings: error: {rel(path)} does not compile (diagnostics above)", file=sys.stderr)
        print(
            f"listings: {len(failed)} of {len(files)} listing sources do not compile; fix them, "
            "then run 'make listings' to update the docs",
            file=sys.stderr,
        )
        return 1
    seconds = time.monotonic() - started
    print(f"listings: {len(files)} listing sources compile (Swift 6, warnings as errors; {seconds:.1f} s)")
    return 0


def main(argv: list[str]) -> int:
    commands = {"sync": lambda: run(write=True), "check": lambda: run(write=False), "typecheck": typecheck}
    if len(argv) != 2 or argv[1] not in commands:
        print("usage: scripts/listings.py sync | check | typecheck", file=sys.stderr)
        return 2
    try:
        return commands[argv[1]]()
    except ListingError as error:
        print(f"listings: error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
