#!/usr/bin/env python3
"""Loads every page of the built DocC site in headless Chromium and checks what a reader sees.

scripts/docs-check.sh runs this against docs/site served on 127.0.0.1; run it directly only
to debug it:

    python3 scripts/docs_check.py --site docs/site --base http://127.0.0.1:8000 \
        --chromium /usr/bin/chromium --screenshots .build-docs/screenshots

For each page found in the built site (every data/**/*.json, and every folder holding an
index.html) it fails, naming the page, when:
  - the page does not render its title: the rendered <h1> must equal the title in the page's
    JSON, and DocC's "page not found" view counts as a failure;
  - an internal link is broken: a same-origin <a href> whose target page is missing, answers
    an HTTP error, or renders DocC's "page not found" view, or whose #fragment names no
    element on the target page;
  - an image does not load: after every image is made eager and scrolled into view, each
    <img> must be complete with a natural width above 0, no image request may fail, and
    DocC must not have swapped an image for its "Image failed to load" placeholder;
  - the page scrolls sideways in a 1280 px wide window: the document is wider than the
    window (scrollWidth > clientWidth by more than 2 px), or a code block is wider than its
    box, so the end of its long lines is off-screen;
  - a title is cut: an element that DocC cuts with an ellipsis (the sidebar's title and
    items, the page titles in the breadcrumbs, a tutorial's navigation) is narrower than
    its text (scrollWidth > clientWidth). The page's own <h1> wraps instead of being cut.

The window has a classic scrollbar, as a reader's has on Linux and Windows, so the layout
is measured in the width left beside it (1265 of 1280 px with Chromium's on Linux).

`--plant SITE COPY PAGES` makes the self-test's broken copy of a site (see
scripts/docs-check.sh --self-test).

It drives Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe: NUL
separated JSON on file descriptors 3 and 4), with only the Python standard library. Every
wait is bounded: --page-timeout per page, --timeout for the whole run.

Exit status: 0 when every page passes, 1 when a check fails, 2 when the check could not run.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

# What the page reports once DocC has rendered it (or shown its error view).
PROBE = r"""
(() => {
  const error = document.querySelector('.generic-error');
  const notFound = error !== null;
  const h1 = document.querySelector('main h1') || document.querySelector('h1');
  const ready = notFound || (h1 !== null && h1.innerText.trim() !== '');
  return JSON.stringify({ready, notFound, h1: h1 ? h1.innerText.trim() : null,
                         errorText: error ? error.innerText.trim() : null});
})()
"""

# Makes every image eager and scrolls each one into view (and the page to its end) so that
# lazy images and lazily rendered content load.
SCROLL = r"""
(async () => {
  const pause = () => new Promise(r => setTimeout(r, 40));
  for (const img of document.images) { img.loading = 'eager'; }
  for (const img of document.images) { img.scrollIntoView({block: 'center'}); await pause(); }
  window.scrollTo(0, document.documentElement.scrollHeight);
  await pause();
  window.scrollTo(0, 0);
  return document.images.length;
})()
"""

# What is wider than its box: the page (naming the outermost element that sticks out), each
# code block's scrolling box (with its longest line), and every title cut short. Runs once the
# page is rendered and scrolled back to its top.
LAYOUT = r"""
(() => {
  const slack = 2;  // px of overflow that is rounding, not a problem
  const root = document.documentElement;
  const width = root.clientWidth;
  const name = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
    [...e.classList].slice(0, 2).map(c => '.' + c).join('');
  const shown = e => e.getClientRects().length > 0 && getComputedStyle(e).visibility === 'visible';
  // True when an ancestor box that ends inside the window clips the element.
  const clipped = e => {
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible' &&
          a.getBoundingClientRect().right <= width + slack) return true;
    }
    return false;
  };
  const result = {window: window.innerWidth, width, page: null, code: [], cut: []};
  if (root.scrollWidth > width + slack) {
    let culprit = null;
    for (const e of document.body.querySelectorAll('*')) {
      const r = e.getBoundingClientRect();
      if (r.width > 0 && r.right > width + slack && shown(e) && !clipped(e)) {
        culprit = name(e) + ' ends at ' + Math.round(r.right) + ' px';
        break;
      }
    }
    result.page = {scrollWidth: root.scrollWidth, culprit};
  }
  for (const pre of document.querySelectorAll('pre')) {
    if (!shown(pre)) continue;
    // The box that scrolls: the <pre> or one of its nearest ancestors (DocC's is a <div>).
    let box = null;
    for (let e = pre, up = 0; e && e !== document.body && up < 4; e = e.parentElement, up++) {
      if (getComputedStyle(e).overflowX !== 'visible' && e.scrollWidth > e.clientWidth + slack) {
        box = e;
        break;
      }
    }
    if (box === null) continue;
    const lines = pre.innerText.split('\n');
    const longest = lines.reduce((a, b) => (b.length > a.length ? b : a), '');
    result.code.push({scrollWidth: box.scrollWidth, clientWidth: box.clientWidth,
                      line: longest.trim()});
  }
  for (const e of document.body.querySelectorAll('*')) {
    if (getComputedStyle(e).textOverflow !== 'ellipsis') continue;
    if (!shown(e) || e.scrollWidth <= e.clientWidth) continue;
    const where = e.closest('.navigator') ? 'in the sidebar'
      : e.closest('nav, .hierarchy') ? 'in the navigation bar' : 'on the page';
    result.cut.push({text: (e.innerText || '').trim().replace(/\s+/g, ' '), where,
                     scrollWidth: e.scrollWidth, clientWidth: e.clientWidth});
  }
  return JSON.stringify(result);
})()
"""

# True once every image has finished loading or failing.
IMAGES_SETTLED = "[...document.images].every(i => i.complete)"

COLLECT = r"""
(() => {
  const images = [...document.images].map(i => {
    const r = i.getBoundingClientRect();
    // DocC swaps an image that failed for a placeholder <img class="fallback">.
    return {src: i.currentSrc || i.src, alt: i.alt, complete: i.complete,
            fallback: i.classList.contains('fallback'),
            width: i.naturalWidth, box: [r.left + window.scrollX, r.top + window.scrollY,
                                         r.width, r.height]};
  });
  const links = [...document.querySelectorAll('a[href]')]
    .map(a => ({href: a.href, text: (a.innerText || a.getAttribute('aria-label') || '')
                                      .trim().slice(0, 60)}));
  const ids = [...document.querySelectorAll('[id]')].map(e => e.id);
  const names = [...document.querySelectorAll('a[name]')].map(e => e.getAttribute('name'));
  return JSON.stringify({images, links, ids: ids.concat(names)});
})()
"""


class CheckError(Exception):
    """The check could not run (exit status 2)."""


class Deadline:
    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()


class Chromium:
    """A headless Chromium driven over --remote-debugging-pipe."""

    def __init__(self, binary: str, deadline: Deadline):
        self.deadline = deadline
        self.profile = tempfile.mkdtemp(prefix="workbook-docs-check-chromium.")
        self.log_path = os.path.join(self.profile, "chromium.log")
        self.messages: queue.Queue = queue.Queue()
        self.events: list = []
        self.next_id = 0
        self.session = None
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()

        def wire_fds():  # runs in the child between fork and exec
            a, b = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [
            binary,
            "--headless",
            "--remote-debugging-pipe",
            f"--user-data-dir={self.profile}",
            "--window-size=1280,900",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-features=Translate,MediaRouter,OptimizationHints",
            "--mute-audio",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            args.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
        args.append("about:blank")
        log = open(self.log_path, "wb")
        try:
            self.proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                close_fds=False,
                preexec_fn=wire_fds,
                start_new_session=True,  # its helper processes share our child's group
            )
        except OSError as error:
            raise CheckError(f"cannot start Chromium ({binary}): {error}") from error
        finally:
            log.close()
            os.close(to_child_r)
            os.close(from_child_w)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        buffer = b""
        while True:
            try:
                chunk = os.read(self.from_child, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                self.messages.put(None)
                return
            buffer += chunk
            *complete, buffer = buffer.split(b"\0")
            for raw in complete:
                if raw:
                    self.messages.put(json.loads(raw))

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = Path(self.log_path).read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])

    def _next(self, timeout: float):
        try:
            message = self.messages.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return False
        if message is None:
            raise CheckError(
                "Chromium exited unexpectedly; the end of its log:\n" + self.log_tail()
            )
        return message

    def call(self, method: str, params: dict | None = None, timeout: float = 15.0, session=True):
        self.next_id += 1
        ident = self.next_id
        message = {"id": ident, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        data = json.dumps(message).encode() + b"\0"
        try:
            os.write(self.to_child, data)
        except OSError as error:
            raise CheckError(f"cannot talk to Chromium ({error}); its log:\n{self.log_tail()}")
        end = time.monotonic() + min(timeout, max(0.0, self.deadline.left()))
        while True:
            message = self._next(end - time.monotonic())
            if message is False:
                raise TimeoutError(f"Chromium did not answer {method} in time")
            if message.get("id") == ident:
                if "error" in message:
                    raise CheckError(f"{method} failed: {message['error'].get('message')}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def pump(self, seconds: float):
        """Collects events for up to `seconds`."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            message = self._next(end - time.monotonic())
            if message is False:
                return
            if "method" in message:
                self.events.append(message)

    def wait_event(self, name: str, seconds: float) -> bool:
        end = time.monotonic() + seconds
        while True:
            for event in self.events:
                if event["method"] == name:
                    return True
            left = min(end, self.deadline.end) - time.monotonic()
            if left <= 0:
                return False
            message = self._next(left)
            if message is False:
                return False
            if "method" in message:
                self.events.append(message)

    def evaluate(self, expression: str, timeout: float = 10.0, await_promise=False):
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": await_promise},
            timeout=timeout,
        )
        if "exceptionDetails" in result:
            detail = result["exceptionDetails"]
            text = detail.get("exception", {}).get("description") or detail.get("text")
            raise CheckError(f"a script in the page failed: {text}")
        return result.get("result", {}).get("value")

    def open_tab(self, scheme: str = "light"):
        targets = self.call("Target.getTargets", session=False)["targetInfos"]
        pages = [t for t in targets if t.get("type") == "page"]
        if pages:
            target = pages[0]["targetId"]
        else:
            target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)[
                "targetId"
            ]
        self.session = self.call(
            "Target.attachToTarget", {"targetId": target, "flatten": True}, session=False
        )["sessionId"]
        for method in ("Page.enable", "Runtime.enable", "Network.enable"):
            self.call(method)
        self.call(
            "Emulation.setEmulatedMedia",
            {"features": [{"name": "prefers-color-scheme", "value": scheme}]},
        )

    def close(self):
        try:
            if self.proc.poll() is None:
                try:
                    self.call("Browser.close", timeout=3, session=False)
                except Exception:
                    pass
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
            # The browser's helper processes are in the group it led; they exit after it.
            end = time.monotonic() + 3
            while _group_alive(self.proc.pid) and time.monotonic() < end:
                _reap()
                time.sleep(0.05)
            if _group_alive(self.proc.pid):
                os.killpg(self.proc.pid, signal.SIGKILL)
            if self.proc.poll() is None:
                self.proc.wait(timeout=5)
            end = time.monotonic() + 2
            while _group_alive(self.proc.pid) and time.monotonic() < end:
                _reap()
                time.sleep(0.05)
        finally:
            for fd in (self.to_child, self.from_child):
                try:
                    os.close(fd)
                except OSError:
                    pass
            shutil.rmtree(self.profile, ignore_errors=True)


def _become_subreaper():
    """On Linux, orphaned Chromium helpers become our children, so we can reap them
    instead of leaving zombies under a container's init that never reaps."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def _reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _group_alive(pgid: int) -> bool:
    _reap()
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Page:
    def __init__(self, path: str, title: str | None, source: str):
        self.path = path
        self.title = title
        self.source = source  # where the page was found in the site, for messages
        self.problems: list[str] = []
        self.rendered = False
        self.ids: set[str] = set()
        self.links: list[dict] = []
        self.images: list[dict] = []
        self.broken_links = 0
        self.missing_images = 0
        self.layout_problems = 0
        self.untitled = False


def discover(site: Path) -> dict[str, Page]:
    """Every page of the built site: data/**/*.json and every folder with an index.html."""
    pages: dict[str, Page] = {}
    data = site / "data"
    for file in sorted(data.rglob("*.json")):
        path = "/" + file.relative_to(data).with_suffix("").as_posix()
        try:
            title = json.loads(file.read_text())["metadata"]["title"]
        except (ValueError, KeyError, TypeError):
            title = None
        pages[path] = Page(path, title, file.relative_to(site).as_posix())
    for index in sorted(site.rglob("index.html")):
        folder = index.parent.relative_to(site).as_posix()
        if folder == ".":
            continue  # the app's shell at the site's root is not a page of its own
        path = "/" + folder
        if path not in pages:
            # A page folder without its JSON renders DocC's not-found view: check it too.
            pages[path] = Page(path, None, index.relative_to(site).as_posix())
    return pages


def order(pages: dict[str, Page], landing: str) -> list[Page]:
    """The landing page first, then the rest in path order."""
    return sorted(pages.values(), key=lambda p: (p.path != landing, p.path))


def split_link(href: str, base: str):
    """(path, fragment) of a same-origin link, or None for another origin."""
    url = urllib.parse.urlsplit(href)
    origin = urllib.parse.urlsplit(base)
    if (url.scheme, url.netloc) != (origin.scheme, origin.netloc):
        return None
    path = urllib.parse.unquote(url.path) or "/"
    if len(path) > 1:
        path = path.rstrip("/")
    if path.endswith("/index.html"):
        path = path[: -len("/index.html")] or "/"
    return path, urllib.parse.unquote(url.fragment)


def http_status(url: str, timeout: float) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except (urllib.error.URLError, OSError):
        return 0


def load(browser: Chromium, url: str, page_timeout: float, settle: bool = True) -> dict:
    """Navigates and waits until DocC has rendered (or timed out). Returns the probe."""
    browser.events.clear()
    result = browser.call("Page.navigate", {"url": url}, timeout=page_timeout)
    if result.get("errorText"):
        return {"error": f"the browser could not open it ({result['errorText']})"}
    end = time.monotonic() + page_timeout
    if not browser.wait_event("Page.loadEventFired", page_timeout):
        return {"error": f"it did not finish loading within {page_timeout:g} s"}
    probe = {}
    while time.monotonic() < end and browser.deadline.left() > 0:
        probe = json.loads(browser.evaluate(PROBE, timeout=page_timeout))
        if probe["ready"]:
            break
        browser.pump(0.1)
    else:
        probe["timeout"] = True
    if settle and probe.get("ready") and not probe.get("notFound"):
        browser.evaluate(SCROLL, timeout=page_timeout, await_promise=True)
        while time.monotonic() < end and browser.deadline.left() > 0:
            if browser.evaluate(IMAGES_SETTLED, timeout=page_timeout):
                break
            browser.pump(0.1)
        browser.pump(0.2)  # late network events
    return probe


def failed_images(browser: Chromium) -> list[str]:
    """Image requests of the current page that failed or answered an HTTP error."""
    kinds: dict[str, tuple[str, str]] = {}
    failures = []
    for event in browser.events:
        params = event.get("params", {})
        if event["method"] == "Network.requestWillBeSent":
            kinds[params["requestId"]] = (params.get("type", ""), params["request"]["url"])
        elif event["method"] == "Network.responseReceived":
            response = params.get("response", {})
            if params.get("type") == "Image" and response.get("status", 200) >= 400:
                failures.append(f"{response.get('url')} (HTTP {response.get('status')})")
        elif event["method"] == "Network.loadingFailed":
            kind, url = kinds.get(params["requestId"], (params.get("type", ""), "?"))
            if (params.get("type") or kind) == "Image":
                failures.append(f"{url} ({params.get('errorText', 'failed')})")
    return failures


def screenshot(browser: Chromium, file: Path, clip=None, full=False):
    params: dict = {"format": "png"}
    if full:
        # The window grows as tall as the page (4500 px at most: enough to see it, and the
        # file stays small) and keeps its width. Capturing beyond the viewport instead lays
        # the page out again at another size, and DocC narrows its sidebar for that, so the
        # picture would not show what the checks measured.
        width, height = json.loads(
            browser.evaluate(
                "JSON.stringify([window.innerWidth, document.documentElement.scrollHeight])"
            )
        )
        height = min(height, 4500)
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        try:
            browser.pump(0.3)  # DocC's resize handlers
            params["clip"] = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
            data = browser.call("Page.captureScreenshot", params, timeout=30)["data"]
        finally:
            browser.call("Emulation.clearDeviceMetricsOverride")
            browser.pump(0.3)
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(base64.b64decode(data))
        return
    if clip:
        x, y, w, h = clip
        pad = 12
        params["clip"] = {
            "x": max(0, x - pad),
            "y": max(0, y - pad),
            "width": w + 2 * pad,
            "height": h + 2 * pad,
            "scale": 1,
        }
    data = browser.call("Page.captureScreenshot", params, timeout=30)["data"]
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_bytes(base64.b64decode(data))


def image_box(browser: Chromium, index: int) -> list[float]:
    """The page-coordinate box of the index-th image, measured now (layout may have moved
    since the images were collected)."""
    return json.loads(
        browser.evaluate(
            f"""(() => {{
              const image = document.images[{index}];
              image.scrollIntoView({{block: 'center'}});
              const r = image.getBoundingClientRect();
              return JSON.stringify([r.left + window.scrollX, r.top + window.scrollY,
                                     r.width, r.height]);
            }})()"""
        )
    )


def screenshot_name(page: Page, landing: str) -> str | None:
    if page.path == landing:
        return "landing"
    leaf = page.path.rsplit("/", 1)[-1]
    if leaf.startswith("chapter") and leaf[7:9].isdigit():
        return f"chapter-{leaf[7:9]}"
    return None


class Reporter:
    def __init__(self):
        self.tty = sys.stdout.isatty() and not os.environ.get("NO_COLOR")

    def line(self, ok: bool, text: str):
        if self.tty:
            mark = "\033[32m✓\033[0m" if ok else "\033[31m✗\033[0m"
        else:
            mark = "ok  " if ok else "FAIL"
        print(f"{mark} {text}", flush=True)

    def detail(self, text: str):
        print(f"      {text}", flush=True)


def run(args) -> int:
    site = Path(args.site)
    if not (site / "index.html").is_file():
        raise CheckError(f"no built site at {site} (run 'make docs' first)")
    base = args.base.rstrip("/")
    deadline = Deadline(args.timeout)
    pages = discover(site)
    if not pages:
        raise CheckError(f"no pages found under {site}/data; is the site built?")
    if args.landing not in pages:
        raise CheckError(f"the landing page {args.landing} is not in the built site")
    selected = order(pages, args.landing)
    if args.only:
        wanted = {p.rstrip("/") for p in args.only}
        selected = [p for p in selected if p.path in wanted]

    def local(url: str) -> str:  # same-origin URLs are shown as paths
        return url[len(base) :] if url.startswith(base + "/") else url

    shots = Path(args.screenshots) if args.screenshots else None
    if shots:
        shutil.rmtree(shots, ignore_errors=True)
    saved: list[Path] = []
    report = Reporter()
    _become_subreaper()
    browser = Chromium(args.chromium, deadline)
    try:
        try:
            browser.open_tab(args.color_scheme)
        except (TimeoutError, CheckError) as error:
            raise CheckError(
                f"Chromium started but did not answer on its debugging pipe ({error}).\n"
                f"The end of its log:\n{browser.log_tail()}"
            )
        chapter_shot_taken = False
        for page in selected:
            if deadline.left() <= 0:
                page.problems.append("not checked: the overall time limit ran out")
                continue
            started = time.monotonic()
            try:
                probe = load(browser, base + page.path, args.page_timeout)
            except TimeoutError as error:
                probe = {"error": str(error)}
            if args.verbose:
                took = time.monotonic() - started
                print(f"  loaded {page.path} in {took:.1f} s", file=sys.stderr)
            if probe.get("error"):
                page.problems.append(probe["error"])
                page.untitled = True
                continue
            if probe.get("notFound"):
                said = " ".join((probe.get("errorText") or "").split())
                problem = "DocC shows its 'page not found' view"
                page.problems.append(problem + (f" ({shorten(said)!r})" if said else ""))
                page.untitled = True
            elif probe.get("timeout") or not probe.get("h1"):
                page.problems.append(
                    f"no title rendered within {args.page_timeout:g} s (no <h1> appeared)"
                )
                page.untitled = True
            elif page.title is not None and probe["h1"] != page.title:
                page.problems.append(
                    f"the rendered title {probe['h1']!r} is not the page's title {page.title!r}"
                )
                page.untitled = True
            else:
                page.rendered = True
            if page.title is None and page.rendered:
                page.problems.append(f"{page.source}: its JSON has no metadata.title")
                page.untitled = True
                page.rendered = False
            if not page.rendered:
                continue
            layout = json.loads(browser.evaluate(LAYOUT))
            for problem in layout_problems(layout):
                page.problems.append(problem)
                page.layout_problems += 1
            collected = json.loads(browser.evaluate(COLLECT))
            page.ids = set(collected["ids"])
            page.links = collected["links"]
            page.images = collected["images"]
            failures = list(dict.fromkeys(map(local, failed_images(browser))))
            for image in page.images:
                if image["fallback"]:
                    # The placeholder loads; what failed is named by the network events.
                    if not failures:
                        page.problems.append(
                            "image does not load: DocC shows its placeholder for the image "
                            f"described {shorten(image['alt'])!r}"
                        )
                        page.missing_images += 1
                elif not (image["complete"] and image["width"] > 0):
                    page.problems.append(f"image does not load: {local(image['src'])}")
                    page.missing_images += 1
            for failure in failures:
                if not any(local(i["src"]) in failure for i in page.images if not i["width"]):
                    page.problems.append(f"image request failed: {failure}")
                    page.missing_images += 1
            if shots:
                name = screenshot_name(page, args.landing)
                if name == "landing" or (name and not chapter_shot_taken):
                    chapter_shot_taken |= name != "landing"
                    file = shots / f"{name}.png"
                    screenshot(browser, file, full=True)
                    saved.append(file)
                for number, image in enumerate(page.images, 1):
                    if image["width"] > 0 and image["box"][2] > 0 and not image["fallback"]:
                        leaf = page.path.rsplit("/", 1)[-1]
                        file = shots / "images" / f"{leaf}-{number}.png"
                        screenshot(browser, file, clip=image_box(browser, number - 1))
                        saved.append(file)

        # Links: a target that is a page of the site must have rendered; any other
        # same-origin target must answer without an HTTP error and, if it is an app
        # page, render without DocC's not-found view.
        other_targets: dict[str, str] = {}
        for page in selected:
            seen: set[tuple[str, str]] = set()
            for link in page.links:
                split = split_link(link["href"], base)
                if split is None or split in seen:
                    continue  # another origin, or a target already checked from this page
                seen.add(split)
                path, fragment = split
                target = pages.get(path)
                label = f"{link['href'][len(base):] or '/'}"
                if link["text"]:
                    label += f" ({link['text']!r})"
                if target is not None:
                    if target in selected and not target.rendered:
                        page.problems.append(f"broken link to {label}: that page does not render")
                        page.broken_links += 1
                    elif fragment and target in selected and fragment not in target.ids:
                        page.problems.append(f"broken link to {label}: no #{fragment} there")
                        page.broken_links += 1
                    continue
                if path not in other_targets:
                    other_targets[path] = check_other(browser, base, path, args, deadline)
                if other_targets[path]:
                    page.problems.append(f"broken link to {label}: {other_targets[path]}")
                    page.broken_links += 1
    finally:
        browser.close()

    for page in selected:
        shown = page.title or page.path
        if page.problems:
            report.line(False, f"{page.path}  {shown}")
            for problem in page.problems:
                report.detail(problem)
        else:
            extra = []
            if page.images:
                extra.append(f"{len(page.images)} image{'s' if len(page.images) != 1 else ''}")
            suffix = f"  [{', '.join(extra)}]" if extra else ""
            report.line(True, f"{page.path}  {shown}{suffix}")

    untitled = sum(p.untitled for p in selected)
    broken = sum(p.broken_links for p in selected)
    missing = sum(p.missing_images for p in selected)
    layout = sum(p.layout_problems for p in selected)
    failed = sum(bool(p.problems) for p in selected)
    for file in saved:
        if file.parent == shots:
            print(f"docs-check: screenshot {os.path.relpath(file)}")
    crops = [f for f in saved if f.parent != shots]
    if crops:
        print(f"docs-check: {len(crops)} image crops in {os.path.relpath(shots / 'images')}/")
    summary = (
        f"docs-check: {count(len(selected), 'page')}, {count(broken, 'broken link')}, "
        f"{count(missing, 'missing image')}, {count(layout, 'layout problem')} "
        "(sideways scrolling or a cut title in a 1280 px window)"
    )
    if untitled:
        their = "its" if untitled == 1 else "their"
        summary += f", {count(untitled, 'page')} without {their} title"
    print(summary)
    if any("overall time limit" in problem for p in selected for problem in p.problems):
        print(
            f"docs-check: the whole run may take {args.timeout:g} s; "
            "allow more with DOCS_CHECK_TIMEOUT=600",
            file=sys.stderr,
        )
    slow = ("no title rendered within", "did not finish loading within")
    if any(s in problem for p in selected for problem in p.problems for s in slow):
        print(
            f"docs-check: each page may take {args.page_timeout:g} s; on a slow or busy "
            "machine allow more with DOCS_CHECK_PAGE_TIMEOUT=60",
            file=sys.stderr,
        )
    if failed:
        print(
            f"docs-check: {count(failed, 'page')} failed; fix the docs in docs/Workbook.docc, "
            "then run 'make docs-check' again",
            file=sys.stderr,
        )
        return 1
    return 0


def layout_problems(layout: dict) -> list[str]:
    """The LAYOUT measurements of one page as problems to report."""
    problems = []
    window, width = layout["window"], layout["width"]
    if layout["page"]:
        page = layout["page"]
        culprit = f"; {page['culprit']}" if page["culprit"] else ""
        problems.append(
            f"the page scrolls sideways in a {window} px window: it is {page['scrollWidth']} px "
            f"wide, and {width} px fit beside the scrollbar{culprit}"
        )
    for code in layout["code"]:
        problems.append(
            f"a code block scrolls sideways in a {window} px window: {code['scrollWidth']} px "
            f"of code in a {code['clientWidth']} px box, so its long lines end off-screen; "
            f"the longest: {shorten(code['line'])!r}"
        )
    for cut in layout["cut"]:
        problems.append(
            f"a title {cut['where']} is cut: {shorten(cut['text'])!r} needs "
            f"{cut['scrollWidth']} px and has {cut['clientWidth']} px"
        )
    return problems


def shorten(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def check_other(browser: Chromium, base: str, path: str, args, deadline: Deadline) -> str:
    """Problem with a same-origin link target that is not a page of the site, or ''."""
    url = base + urllib.parse.quote(path)
    status = http_status(url, timeout=min(args.page_timeout, max(1, deadline.left())))
    if status == 0:
        return "the server did not answer"
    if status >= 400:
        return f"HTTP {status}"
    if path == "/" or path.startswith(("/documentation", "/tutorials")):
        try:
            probe = load(browser, url, args.page_timeout, settle=False)
        except TimeoutError as error:
            return str(error)
        if probe.get("error"):
            return probe["error"]
        if probe.get("notFound"):
            return "it renders DocC's 'page not found' view"
    return ""


def image_urls(page_json: Path) -> list[str]:
    """The image files a page's JSON refers to."""
    page = json.loads(page_json.read_text())
    return [
        variant["url"]
        for ref in page.get("references", {}).values()
        if ref.get("type") == "image"
        for variant in ref.get("variants", [])
    ]


def plant(source: Path, copy: Path, landing: str = "/documentation/workbook"):
    """Copies the site to `copy` with problems planted in it, for the self-test. Returns
    the text the check must print (one piece per problem) and the pages to check."""
    shutil.copytree(source, copy)
    data = copy / "data"
    landing_json = data / (landing.strip("/") + ".json")
    expected = []
    chapter1 = f"{landing}/chapter01-callbacks"
    gone = f"{landing}/chapter02-delegates"
    pages = [landing, chapter1, gone]

    # A page whose JSON is gone: DocC renders "page not found", and links to it break.
    (data / (gone.strip("/") + ".json")).unlink()
    expected += ["DocC shows its 'page not found' view", f"broken link to {gone}"]

    # Links from the landing page to a page that does not exist and to a missing anchor.
    page = json.loads(landing_json.read_text())
    by_leaf = {r.get("url", "").rsplit("/", 1)[-1]: r for r in page["references"].values()}
    by_leaf["howgradingworks"]["url"] = f"{landing}/no-such-page"
    by_leaf["chapter03-exactlyonce"]["url"] = f"{chapter1}#no-such-section"
    landing_json.write_text(json.dumps(page))
    expected += [f"broken link to {landing}/no-such-page", "no #no-such-section there"]

    # Chapter 1's image files are gone: the requests answer 404.
    images = image_urls(data / (chapter1.strip("/") + ".json"))
    if not images:
        raise CheckError("the self-test needs an image on the Chapter 1 page, and it has none")
    for url in images:
        (copy / url.lstrip("/")).unlink(missing_ok=True)
    expected.append(images[0])  # "image does not load: …" or "image request failed: …"

    # Another page's image is served, but is not an image any more.
    for file in sorted(data.rglob("*.json")):
        path = "/" + file.relative_to(data).with_suffix("").as_posix()
        others = image_urls(file) if path not in pages else []
        if others:
            for url in others:
                (copy / url.lstrip("/")).write_text("<svg xmlns='http://www.w3.org/2000/svg'><rect")
            expected.append("DocC shows its placeholder for the image")
            pages.append(path)
            break
    else:
        raise CheckError("the self-test needs images on two pages besides Chapter 2")

    # Layout problems, each on an article of its own that no other plant touched.
    articles = [
        "/" + file.relative_to(data).with_suffix("").as_posix()
        for file in sorted((data / landing.strip("/")).glob("*.json"))
    ]
    free = [path for path in articles if path not in pages]
    if len(free) < 4:
        raise CheckError("the self-test needs four more articles to plant layout problems in")
    code_page, wide_page, sidebar_page, title_page = free[:4]
    pages += free[:4]

    # A code block that scrolls sideways: a long line, on a page that lost the rule that
    # makes code wrap (as if scripts/docs.sh no longer added it).
    line = "planted long line:" + " and on" * 60
    edit_json(data, code_page, lambda page: page["primaryContentSections"][0]["content"].insert(
        0, {"type": "codeListing", "syntax": "text", "code": [line]}))
    add_style(copy, code_page, ".code-listing pre,.code-listing pre code{white-space:pre!important}")
    expected.append("the longest: 'planted long line:")

    # A page wider than the window.
    add_style(copy, wide_page, "main{min-width:1600px}")
    expected.append("the page scrolls sideways in a 1280 px window")

    # A sidebar item whose title is too long for it: the navigator's titles come from
    # index/index.json.
    index_json = copy / "index" / "index.json"
    index = json.loads(index_json.read_text())
    node = find_node(index, sidebar_page)
    if node is None:
        raise CheckError(f"the sidebar index has no item for {sidebar_page}")
    node["title"] = "Planted title, far too long for the sidebar: " + node["title"]
    index_json.write_text(json.dumps(index))
    expected.append("a title in the sidebar is cut: 'Planted title, far too long")

    # A page title too long for the breadcrumbs, which cut it with an ellipsis.
    def retitle(page):
        page["metadata"]["title"] = (
            "Planted page title, long enough that the breadcrumbs must cut it short: "
            + page["metadata"]["title"]
        )
    edit_json(data, title_page, retitle)
    expected.append("a title in the navigation bar is cut: 'Planted page title")
    return expected, pages


def edit_json(data: Path, path: str, change):
    """Applies `change` to the JSON of the page at `path`."""
    file = data / (path.strip("/") + ".json")
    page = json.loads(file.read_text())
    change(page)
    file.write_text(json.dumps(page))


def add_style(site: Path, path: str, css: str):
    """Adds a style sheet to the page at `path` (its own index.html), after DocC's and ours."""
    file = site / path.strip("/") / "index.html"
    file.write_text(file.read_text().replace("</head>", f"<style>{css}</style></head>", 1))


def find_node(node, path: str):
    """The navigator index item for `path`, searched depth first."""
    if isinstance(node, dict):
        if node.get("path") == path:
            return node
        children = node.get("children", []) + [
            item for roots in node.get("interfaceLanguages", {}).values() for item in roots
        ]
        for child in children:
            found = find_node(child, path)
            if found is not None:
                return found
    return None


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--plant":
        # --plant SITE COPY PAGES: prints what the check must report; writes the pages to
        # check, one per line, to the file PAGES.
        try:
            expected, pages = plant(Path(sys.argv[2]), Path(sys.argv[3]))
            Path(sys.argv[4]).write_text("\n".join(pages) + "\n")
            print("\n".join(expected))
        except (CheckError, OSError, KeyError) as error:
            print(f"docs-check: cannot plant problems in a copy of the site: {error}",
                  file=sys.stderr)
            return 2
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", required=True, help="the built site (docs/site)")
    parser.add_argument("--base", required=True, help="where it is served, http://127.0.0.1:N")
    parser.add_argument("--chromium", required=True, help="the Chromium or Chrome binary")
    parser.add_argument("--landing", default="/documentation/workbook")
    parser.add_argument("--screenshots", help="folder for the screenshots (emptied first)")
    parser.add_argument("--only", action="append", help="check only this page path")
    parser.add_argument("--page-timeout", type=float, default=20.0)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument(
        "--color-scheme",
        choices=["light", "dark"],
        default="light",
        help="the preferred color scheme the pages see (for dark-mode screenshots)",
    )
    parser.add_argument("--verbose", action="store_true", help="print each page's load time")
    args = parser.parse_args()

    # Ctrl-C or a kill still closes the browser (the `finally` in run()).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))
    try:
        return run(args)
    except CheckError as error:
        print(f"docs-check: {error}", file=sys.stderr)
        return 2
    except TimeoutError as error:
        print(
            f"docs-check: {error}; a busy machine may need more time "
            "(DOCS_CHECK_PAGE_TIMEOUT=60, DOCS_CHECK_TIMEOUT=600)",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print("docs-check: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
