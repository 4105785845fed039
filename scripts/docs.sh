#!/usr/bin/env bash
# Builds and previews the workbook's DocC site.
#
#   scripts/docs.sh build     check the code listings, then render docs/Workbook.docc into
#                             docs/site (static hosting); any DocC warning fails the build
#   scripts/docs.sh preview   render docs/site if an article changed (without the listings
#                             check: that is build's job), then serve it on 127.0.0.1
#                             (PORT=8000 by default) until Ctrl-C
#
# `make docs` and `make docs-preview` call this script. It works from any directory.
# DOCC=/path/to/docc picks a specific DocC; otherwise `docc` on PATH, or `xcrun docc`.
#
# Every ```swift block in the articles, and every code file of the tutorial, is copied from
# a source under docs/Listings/ (scripts/listings.py explains the markers). Before rendering,
# build compiles each source against the support modules and checks that every copy is
# current, so a listing cannot rot: `make listings` rewrites the copies after an edit.
# That compile takes a minute the first time, so preview skips it: a reader sees the
# articles in seconds, and `make docs` (which `make test` runs) still fails on a stale or
# broken listing.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
script="$root/scripts/docs.sh"
catalog="$root/docs/Workbook.docc"
site="$root/docs/site"
# The catalog's root page is Workbook.md, so the site opens at this path.
landing="documentation/workbook"
scratch=""
ticker=""

die() {
  stop_ticker
  echo "docs: $*" >&2
  exit 1
}

# While a step runs, says every few seconds what the wait is for: "docs: still $1 (15 s)".
# The first line comes after 5 s, so a quick step prints nothing.
start_ticker() {
  stop_ticker
  local what="$1" parent="$$"
  (
    seconds=0
    # The sleeps' output goes nowhere, so that a reader of the pipe (`| tee`) does not wait
    # for a sleep that outlives the ticker.
    while sleep 1 </dev/null >/dev/null 2>&1; do
      kill -0 "$parent" 2>/dev/null || exit 0
      seconds=$((seconds + 1))
      if ((seconds == 5 || (seconds > 5 && seconds % 10 == 5))); then
        echo "docs: still $what ($seconds s)"
      fi
    done
  ) &
  ticker=$!
}

stop_ticker() {
  if [[ -n "$ticker" ]]; then
    kill "$ticker" 2>/dev/null || true
    wait "$ticker" 2>/dev/null || true
    ticker=""
  fi
}

# The EXIT trap of a direct run: no ticker or scratch folder outlives the script.
cleanup() {
  stop_ticker
  if [[ -n "$scratch" ]]; then
    rm -rf "$scratch"
  fi
}

usage() {
  cat >&2 <<'USAGE'
usage: scripts/docs.sh build     compile and check the code listings, then render docs/site
                                 (fails on any warning)
       scripts/docs.sh preview   render the articles if they changed (no listings compile),
                                 then serve docs/site on 127.0.0.1
                                 (PORT=8000 by default; PORT=NNNN to choose)
USAGE
  exit 2
}

# Sets the `docc` array to the command that runs DocC, or explains how to get one.
find_docc() {
  if [[ -n "${DOCC:-}" ]]; then
    [[ -x "$DOCC" ]] || command -v "$DOCC" >/dev/null 2>&1 \
      || die "DOCC is set to '$DOCC', which is not an executable."
    docc=("$DOCC")
  elif command -v docc >/dev/null 2>&1; then
    docc=(docc)
  elif command -v xcrun >/dev/null 2>&1 && xcrun --find docc >/dev/null 2>&1; then
    docc=(xcrun docc)
  else
    die "cannot find DocC ('docc'). It ships with the Swift toolchain (swift.org \
downloads for Linux, Xcode on macOS): put the toolchain's usr/bin on PATH, \
or set DOCC=/path/to/docc."
  fi
}

# Compiles every listing source and checks that the docs show them as they are.
check_listings() {
  command -v python3 >/dev/null 2>&1 \
    || die "checking the code listings needs python3, and python3 is not on PATH."
  echo "docs: compiling the code listings under docs/Listings/ (the first time also builds \
the support modules: about a minute)"
  start_ticker "compiling the code listings"
  python3 "$root/scripts/listings.py" typecheck \
    || die "a listing source under docs/Listings/ does not compile; fix it (errors above), \
then run 'make listings'."
  stop_ticker
  python3 "$root/scripts/listings.py" check \
    || die "the docs' code listings are not in step with docs/Listings/ (see above); \
run 'make listings' to copy the sources into the docs, then 'make docs' again."
}

# build          check the listings, render the site, and say how to serve it
# build preview  only render the site (preview serves it next)
build() {
  local mode="${1:-full}"
  [[ -d "$catalog" ]] || die "no DocC catalog at $catalog"
  find_docc
  if [[ "$mode" == full ]]; then
    check_listings
  fi

  # Render into a scratch folder and swap it in only on success, so a failed build never
  # leaves a half-written site behind.
  scratch="$(mktemp -d "${TMPDIR:-/tmp}/workbook-docs.XXXXXX")"
  local log="$scratch/docc.log"
  # The site shows the catalog as it was when the render started: stamped with this time,
  # it counts as stale (needs_build) if a file changes while DocC reads it.
  touch "$scratch/started"

  echo "docs: rendering docs/Workbook.docc into ${site#"$root"/}/ with DocC"
  start_ticker "rendering the articles with DocC"
  local status=0
  "${docc[@]}" convert "$catalog" \
    --output-path "$scratch/site" \
    --transform-for-static-hosting \
    --warnings-as-errors \
    --fallback-display-name "Workbook" \
    --fallback-bundle-identifier "org.workbook.swift-concurrency" \
    --default-code-listing-language swift \
    >"$log" 2>&1 || status=$?
  stop_ticker

  # With --warnings-as-errors every warning is reported as an error; count both words
  # so the message stays right if DocC changes how it labels them.
  local problems
  problems="$(grep -cE '^(warning|error):' "$log" || true)"
  if ((status != 0 || problems > 0)); then
    # DocC names files relative to the catalog; show them relative to the repository.
    grep -v '^[[:space:]]*$' "$log" | sed -E 's#^( *--> )#\1docs/Workbook.docc/#' >&2 || true
    if ((problems > 0)); then
      die "the DocC build failed with $problems diagnostic(s); warnings count as errors here. \
Fix them in docs/Workbook.docc and run 'make docs' again."
    fi
    die "DocC failed (exit status $status) without a diagnostic; its output is above."
  fi

  # Style fixes for DocC-Render, added to the <head> of every page:
  #  - It puts a line-break opportunity (<wbr>) at every change from a lower- to an upper-case
  #    letter in inline code, so `CoChannel` at the end of a line renders as "Co", then
  #    "Channel" on the next (swift-docc-render#825). Inline code breaks at its spaces
  #    instead, and inside a word only when the word cannot fit on a line of its own.
  #  - A code block scrolls sideways, so the end of a long line (a runtime message, a
  #    trailing comment) is off-screen. Code blocks wrap their long lines instead, and a
  #    wrapped line goes on two columns to the right of where it starts (the script counts
  #    each line's leading spaces into --workbook-indent).
  #  - The navigator's title is cut with an ellipsis when it is longer than the sidebar is
  #    wide; it wraps instead.
  #  - A tutorial's code pane is as wide as half the viewport plus a column, measured in vw,
  #    which counts the vertical scrollbar: the pane ends under the scrollbar and the page
  #    scrolls sideways. The script measures the scrollbar (--workbook-scrollbar), and the
  #    pane leaves room for it.
  #  - A tutorial's introduction is drawn white on black in light mode as well: a black band
  #    across a white page. It takes the page's light colors unless the reader chose dark.
  python3 - "$scratch/site" <<'PY'
import pathlib, sys
rules = (
    ":not(pre)>code wbr{display:none}:not(pre)>code{overflow-wrap:break-word}"
    ".code-listing pre,.code-listing pre code{white-space:pre-wrap;overflow-wrap:anywhere}"
    ".code-listing pre .code-line-container{display:inline-flex;width:100%}"
    ".code-listing pre .code-number{flex:none}"
    ".code-listing pre .code-line{flex:1 1 0;min-width:0;"
    "padding-left:calc((var(--workbook-indent,0) + 2) * 1ch);"
    "text-indent:calc((var(--workbook-indent,0) + 2) * -1ch)}"
    ".navigator .card-link{white-space:normal}"
    ".steps .asset-container.for-step-code"
    "{width:calc(50vw - var(--workbook-scrollbar,0px) / 2 + 8.33333%)}"
    "body:not([data-color-scheme=dark]) .tutorial-hero .hero.dark"
    "{--color-tutorial-hero-background:#f0f0f0;--color-tutorial-hero-text:#1d1d1f;"
    "--color-hero-eyebrow:#666}"
    "body:not([data-color-scheme=dark]) .tutorial-hero .hero.dark :is(.heading,.metadata .content)"
    "{color:var(--color-tutorial-hero-text)}"
    "@media (prefers-color-scheme:dark){body[data-color-scheme=auto] .tutorial-hero .hero.dark"
    "{--color-tutorial-hero-background:#000;--color-tutorial-hero-text:#fff;"
    "--color-hero-eyebrow:#ccc}}"
)
script = (
    "(()=>{const r=document.documentElement;"
    "const f=()=>r.style.setProperty('--workbook-scrollbar',innerWidth-r.clientWidth+'px');"
    "new ResizeObserver(f).observe(r);addEventListener('resize',f);"
    "const g=()=>{for(const l of document.querySelectorAll('.code-listing .code-line')){"
    "const n=String(/^ */.exec(l.textContent)[0].length);"
    "if(l.style.getPropertyValue('--workbook-indent')!==n)l.style.setProperty('--workbook-indent',n)}};"
    "new MutationObserver(g).observe(r,{childList:true,subtree:true,characterData:true})})()"
)
head = f"<style>{rules}</style><script>{script}</script></head>"
for page in pathlib.Path(sys.argv[1]).rglob("index.html"):
    text = page.read_text()
    page.write_text(text.replace("</head>", head, 1))
PY

  touch -r "$scratch/started" "$scratch/site/index.html"
  rm -rf "$site"
  mkdir -p "$(dirname "$site")"
  mv "$scratch/site" "$site"
  rm -rf "$scratch"
  scratch=""

  # Articles and tutorial pages alike: the same pages that docs-check loads.
  local pages
  pages="$(find "$site/$landing" "$site/tutorials" -name index.html 2>/dev/null | wc -l | tr -d ' ')"
  echo "docs: built $pages pages with 0 warnings into ${site#"$root"/}/"
  if [[ "$mode" == full ]]; then
    echo "docs: the site needs a web server (it loads its pages as JSON):"
    echo "      run 'make docs-preview' and open /$landing"
  fi
}

# True when the site is missing or older than any file it is rendered from: the catalog
# and this script (which adds the style fixes). The listing sources under docs/Listings/
# are not among them: the articles hold copies, and build checks that they are current.
needs_build() {
  local stamp="$site/index.html"
  [[ -f "$stamp" ]] || return 0
  [[ -n "$(find "$catalog" "$script" -newer "$stamp" -print -quit)" ]]
}

# Prints the first port from $1 that 127.0.0.1 can bind, trying up to $2 ports.
free_port() {
  python3 - "$1" "$2" <<'PY'
import socket, sys
first, tries = int(sys.argv[1]), int(sys.argv[2])
for port in range(first, min(first + tries, 65536)):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # http.server binds with SO_REUSEADDR, so a port whose last connections still linger
        # in TIME_WAIT (a preview stopped a moment ago) is free for it. On Linux the option
        # never allows a port that a server listens on; elsewhere it may, so it stays off.
        if sys.platform.startswith("linux"):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        print(port)
        sys.exit(0)
sys.exit(1)
PY
}

preview() {
  command -v python3 >/dev/null 2>&1 \
    || die "preview serves the site with python3's http.server, and python3 is not on PATH."

  local first=8000 tries=50
  if [[ -n "${PORT:-}" ]]; then
    [[ "$PORT" =~ ^[0-9]{1,5}$ ]] && ((10#$PORT >= 1 && 10#$PORT <= 65535)) \
      || die "PORT must be a number from 1 to 65535, not '$PORT'."
    first=$((10#$PORT)) tries=1
  fi

  # The port first: a busy one is reported before any wait.
  local port
  if ! port="$(free_port "$first" "$tries")"; then
    if ((tries == 1)); then
      die "port $first on 127.0.0.1 is in use; choose another, e.g. PORT=8080 make docs-preview"
    fi
    die "no free port from $first to $((first + tries - 1)) on 127.0.0.1; choose one with PORT=NNNN"
  fi

  if needs_build; then
    build preview
  else
    echo "docs: docs/site is up to date"
  fi

  echo "docs: serving docs/site on 127.0.0.1 only; press Ctrl-C to stop"
  echo "docs: open http://127.0.0.1:$port/$landing"
  exec python3 -m http.server "$port" --bind 127.0.0.1 --directory "$site"
}

# scripts/docs-check.sh sources this file for its helpers (needs_build, free_port);
# only a direct run acts on the command line.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  trap cleanup EXIT
  case "${1:-}" in
    build) build ;;
    preview) preview ;;
    *) usage ;;
  esac
fi
