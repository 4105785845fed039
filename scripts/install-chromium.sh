#!/usr/bin/env bash
# Finds a Chromium (or Google Chrome) that can run headless, installing Debian's `chromium`
# package when none is there, and prints its path as the last line of standard output.
# Everything else goes to standard error.
#
#   scripts/install-chromium.sh          find or install; prints e.g. /usr/bin/chromium
#   CHROMIUM=/path/to/chrome scripts/install-chromium.sh   use that binary
#
# On Debian and Ubuntu it runs `apt-get update` once and `apt-get install chromium`, as root
# or through sudo. On macOS it looks for Google Chrome or Chromium in /Applications. Anywhere
# else it says what to install. scripts/docs-check.sh calls it.
set -euo pipefail

say() { echo "install-chromium: $*" >&2; }
die() {
  say "$*"
  exit 1
}

# Prints the first of the usual Chromium and Chrome commands that exists.
find_chromium() {
  local candidate
  for candidate in chromium chromium-browser google-chrome-stable google-chrome chrome; do
    if command -v "$candidate" >/dev/null 2>&1; then
      command -v "$candidate"
      return 0
    fi
  done
  for candidate in \
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome" \
    "/Applications/Chromium.app/Contents/MacOS/Chromium" \
    "$HOME/Applications/Google Chrome.app/Contents/MacOS/Google Chrome" \
    "$HOME/Applications/Chromium.app/Contents/MacOS/Chromium"; do
    if [[ -x "$candidate" ]]; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

if [[ -n "${CHROMIUM:-}" ]]; then
  if [[ -x "$CHROMIUM" && ! -d "$CHROMIUM" ]]; then
    echo "$CHROMIUM"
  elif command -v "$CHROMIUM" >/dev/null 2>&1; then
    command -v "$CHROMIUM"
  else
    die "CHROMIUM is set to '$CHROMIUM', which is not an executable. Point it at a Chromium \
or Chrome binary, or unset it to let this script find or install one."
  fi
  exit 0
fi

if found="$(find_chromium)"; then
  echo "$found"
  exit 0
fi

case "$(uname -s)" in
  Darwin)
    die "no Chrome or Chromium found. Install one (Google Chrome from google.com/chrome, \
or 'brew install --cask chromium'), or set CHROMIUM=/path/to/the/binary."
    ;;
  Linux) ;;
  *)
    die "no Chrome or Chromium found. Install Chromium with your system's package manager, \
or set CHROMIUM=/path/to/the/binary."
    ;;
esac

if ! command -v apt-get >/dev/null 2>&1; then
  die "no Chromium found and this system has no apt-get. Install Chromium with your \
package manager (for example 'dnf install chromium' or 'pacman -S chromium'), \
or set CHROMIUM=/path/to/the/binary."
fi

if [[ "$(id -u)" -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
  say "installing Chromium needs root; sudo may ask for your password"
else
  die "no Chromium found. Install it as root with 'apt-get update && apt-get install -y \
chromium', then run this again (or set CHROMIUM=/path/to/the/binary)."
fi

say "Chromium is not installed; installing Debian's 'chromium' package (a few minutes)…"
export DEBIAN_FRONTEND=noninteractive
log="$(mktemp "${TMPDIR:-/tmp}/install-chromium.XXXXXX")"
trap 'rm -f "$log"' EXIT
if ! "${as_root[@]}" apt-get update >"$log" 2>&1; then
  tail -n 20 "$log" >&2
  die "'apt-get update' failed (output above). Check the network and the apt sources, \
then run this again."
fi
if ! "${as_root[@]}" apt-get install -y chromium >"$log" 2>&1; then
  tail -n 20 "$log" >&2
  die "'apt-get install chromium' failed (output above). On Ubuntu the package needs snap; \
install Google Chrome or Chromium another way and set CHROMIUM=/path/to/the/binary."
fi

found="$(find_chromium)" || die "the chromium package installed, but no chromium command \
is on PATH. Set CHROMIUM=/path/to/the/binary."
say "installed $("$found" --version 2>/dev/null || echo "$found")"
echo "$found"
