"""A real browser (Debian's Chromium, headless, driven by Playwright) with every non-local request blocked.

CI (``.ci/run``) installs Chromium (``make chromium``) when it is missing and sets ``ATTN_REQUIRE_BROWSER=1``,
so there a missing browser is a failure; elsewhere the browser tests skip and say why.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from browser_utils import CHROMIUM_FLAGS, chromium_path, start_server
from playwright.sync_api import sync_playwright


@pytest.fixture(scope="session")
def browser():
    executable = chromium_path()
    if executable is None:
        reason = "Chromium is not installed (make chromium installs Debian's package; or set ATTN_CHROMIUM)"
        if os.environ.get("ATTN_REQUIRE_BROWSER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def serve():
    """serve(folder) -> base URL of a local HTTP server for that folder (one server per folder)."""
    servers = {}

    def start(folder: Path) -> str:
        if folder not in servers:
            servers[folder] = start_server(folder)
        return f"http://127.0.0.1:{servers[folder].server_port}/"

    yield start
    for server in servers.values():
        server.shutdown()
        server.server_close()
