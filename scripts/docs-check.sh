#!/usr/bin/env bash
# Checks the rendered DocC site the way a reader sees it: in headless Chromium.
#
#   scripts/docs-check.sh             build docs/site if needed, serve it on 127.0.0.1, load
#                                     every page in a 1280 px wide window, and fail (naming
#                                     the page) on a missing title, a broken internal link,
#                                     an image that does not load, a page or code block that
#                                     scrolls sideways, or a title cut with an ellipsis;
#                                     saves screenshots in .build-docs/screenshots
#   scripts/docs-check.sh --self-test plant a missing page, broken links, a missing anchor,
#                                     a missing and a corrupt image, a code block and a page
#                                     too wide, and titles too long for the sidebar and the
#                                     breadcrumbs in a copy of the site, and make sure the
#                                     check reports every one of them
#
# `make docs-check` runs the first, `make test` both. Chromium comes from
# scripts/install-chromium.sh (it installs Debian's package when none is found; set
# CHROMIUM=/path/to/chrome to choose one). The page checks are in scripts/docs_check.py.
# DOCS_CHECK_PAGE_TIMEOUT (seconds, default 20) bounds each page, DOCS_CHECK_TIMEOUT
# (default 300) the whole run; COLOR_SCHEME=dark takes the screenshots in dark mode. The web
# server it starts is stopped on exit, on failure and on Ctrl-C.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The docs script's helpers and settings: site, landing, needs_build, free_port.
# shellcheck source=docs.sh
source "$root/scripts/docs.sh"
cd "$root"

screenshots=".build-docs/screenshots"
page_timeout="${DOCS_CHECK_PAGE_TIMEOUT:-20}"
overall_timeout="${DOCS_CHECK_TIMEOUT:-300}"
server_pid=""
work=""

die() {
  echo "docs-check: $*" >&2
  exit 2
}

cleanup() {
  if [[ -n "$server_pid" ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
  if [[ -n "$work" ]]; then
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'cleanup; echo "docs-check: interrupted" >&2; exit 130' INT TERM

# Serves folder $1 on a free port of 127.0.0.1 (from 8100 up) and sets `base` to its URL.
serve() {
  local folder="$1" port attempt
  for attempt in 1 2 3; do
    port="$(free_port 8100 200)" || die "no free port from 8100 to 8299 on 127.0.0.1"
    python3 -m http.server "$port" --bind 127.0.0.1 --directory "$folder" \
      >"$work/server-$port.log" 2>&1 &
    server_pid=$!
    # Ready when the site's shell answers; gone when another process took the port first.
    if python3 - "http://127.0.0.1:$port/index.html" "$server_pid" <<'PY'; then
import os, sys, time, urllib.request
url, pid = sys.argv[1], int(sys.argv[2])
for _ in range(100):
    try:
        with urllib.request.urlopen(url, timeout=1):
            sys.exit(0)
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit(1)
    time.sleep(0.1)
sys.exit(1)
PY
      base="http://127.0.0.1:$port"
      return 0
    fi
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  done
  cat "$work"/server-*.log >&2 || true
  die "could not start python3's http.server on 127.0.0.1 (its output is above)"
}

self_test=false
case "${1:-}" in
  "") ;;
  --self-test) self_test=true ;;
  *)
    echo "usage: scripts/docs-check.sh [--self-test]" >&2
    exit 2
    ;;
esac

command -v python3 >/dev/null 2>&1 \
  || die "python3 is needed to serve the site and drive Chromium; install it \
(for example: apt-get install python3)."
chromium="$(bash "$root/scripts/install-chromium.sh" | tail -n 1)" \
  || die "no Chromium to check the pages with (see the message above)."
[[ -n "$chromium" ]] || die "scripts/install-chromium.sh printed no Chromium path."

if needs_build; then
  bash "$root/scripts/docs.sh" build
else
  echo "docs-check: docs/site is up to date"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/workbook-docs-check.XXXXXX")"
checker=(python3 "$root/scripts/docs_check.py" --chromium "$chromium"
  --landing "/$landing" --page-timeout "$page_timeout" --timeout "$overall_timeout"
  --color-scheme "${COLOR_SCHEME:-light}")

if ! $self_test; then
  serve "$site"
  version="$("$chromium" --version 2>/dev/null || echo "$chromium")"
  echo "docs-check: serving docs/site at $base; loading every page in $version"
  status=0
  "${checker[@]}" --site "$site" --base "$base" --screenshots "$screenshots" || status=$?
  exit "$status"
fi

# The self-test: a copy of the site with planted problems, checked on a few pages.
echo "docs-check self-test: planting problems in a copy of docs/site"
python3 "$root/scripts/docs_check.py" --plant "$site" "$work/site" "$work/pages" >"$work/expected"
only=()
while IFS= read -r page; do only+=(--only "$page"); done <"$work/pages"
serve "$work/site"
status=0
"${checker[@]}" --site "$work/site" --base "$base" "${only[@]}" >"$work/output" 2>&1 || status=$?
missed=0
while IFS= read -r expected; do
  if ! grep -qF -- "$expected" "$work/output"; then
    echo "docs-check self-test: the check did not report: $expected" >&2
    missed=$((missed + 1))
  fi
done <"$work/expected"
if ((status != 1)); then
  echo "docs-check self-test: the check exited with status $status on a broken site; expected 1" >&2
  missed=$((missed + 1))
fi
planted="$(wc -l <"$work/expected" | tr -d ' ')"
if ((missed > 0)); then
  # Only now is the check's own report worth reading: it shows what it did say.
  sed 's/^/  must report: /' "$work/expected" >&2
  sed 's/^/  | /' "$work/output" >&2
  echo "docs-check self-test: FAILED; scripts/docs_check.py no longer catches what it must" >&2
  exit 1
fi
# The planted problems' FAIL lines stay unprinted: a passing run shows nothing that reads as a
# failure.
echo "docs-check self-test: caught $planted of $planted planted problems (the check exited with status 1, as it must)"
