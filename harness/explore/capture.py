"""Screenshots of the explorer, as Chromium renders it at a laptop's 1280x800: the docs' pictures
(docs/images/, `make screenshots`) and the browser tests' pages come from here.

`python -m harness.explore.capture FOLDER` (`make screenshots`: docs/images) writes
FOLDER/explore-{kraft,zk,replication,kip642}.png, each a committed counterexample at its violation with the
protocol picture and the message timeline in view. Playwright (a dev dependency) drives the Chromium at
$CHROMIUM (default /usr/bin/chromium).
"""

from __future__ import annotations

import os
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from harness.explore import create_app, start_server, url_of
from harness.trace import read_shown

CORPUS = Path(__file__).resolve().parents[2] / "counterexamples"
VIEWPORT = {"width": 1280, "height": 800}
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# The docs' counterexamples: each violation names a broker or server, and the message-passing runs send requests.
DOCS = {"explore-kraft.png": "kraft-small-expand_below_hwm-LeaderCandidateCompleteness.itf.json",
        "explore-zk.png": "zk-kafka-replace-failover-NoStrayReplicas.itf.json",
        "explore-replication.png": "replication-p1-isr_join_below_hwm-LeaderCandidateCompletenessProperty.itf.json",
        "explore-kip642.png": "kip642-ci-two_uncommitted_changes-AtMostOneUncommittedVoterChange.itf.json"}


@contextmanager
def serving(app) -> Iterator[str]:
    """The explorer on a free loopback port, in a background thread of this process; its URL."""
    server = start_server(app, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield url_of(server)
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def chromium_page(viewport: dict = VIEWPORT):
    """A page of headless Chromium (the one at $CHROMIUM) through Playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"),
                                      args=CHROMIUM_ARGS)
        try:
            yield chromium.new_page(viewport=viewport)
        finally:
            chromium.close()


def screenshot(trace_path: Path, png: Path, full_page: bool = False) -> None:
    """The explorer at the last step of a trace (its violation): the viewport, or the whole page."""
    trace = read_shown(trace_path)
    with serving(create_app(traces=[trace])) as url, chromium_page() as page:
        page.goto(f"{url}trace/0/step/{len(trace.states) - 1}")
        page.screenshot(path=str(png), full_page=full_page)


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, trace in DOCS.items():
        screenshot(CORPUS / trace, folder / name)
        print(folder / name)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else CORPUS.parent / "docs" / "images")
