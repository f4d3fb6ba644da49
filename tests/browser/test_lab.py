"""The chapters in JupyterLab with a live kernel, as a student uses them: headless Chromium (Playwright) on a
JupyterLab server started from the project's venv (127.0.0.1, a random port, a token, no browser of its own).

The test copies a chapter into a temporary folder (JupyterLab saves what it runs; the committed notebook stays as
it is), opens it, runs all cells from the Run menu, and then uses every panel: each slider with the keyboard
(the focused handle, an arrow key) and with the mouse (a drag), each text box by typing (a sentence, a story on
one line), each drop-down by picking its last entry; the plot or the answer must change every time. On the
attention viewers it hovers a cell and moves their sliders with the arrow keys, which must move the slider, not
JupyterLab's selected cell. Any console error, error output or "Error displaying widget" fails it. Screenshots
of the panels go to ``_build/screenshots/lab/``.

Chapter 1 runs in every ``make test``; ``make lab-test`` runs every chapter (``ATTN_LAB_CHAPTERS=all``, or a
comma-separated list of chapter names). The server is shut down at the end, also when the test fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import nbformat
import pytest
from browser_utils import check_viewer
from notebook_utils import NOTEBOOKS, ROOT
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

SCREENSHOTS = ROOT / "_build" / "screenshots" / "lab"


def _chapters(wanted: str) -> list[str]:
    """The chapters named in ATTN_LAB_CHAPTERS ("all", or names separated by commas)."""
    known = [p.stem for p in NOTEBOOKS]
    if wanted.strip() == "all":
        return known
    names = [name.strip() for name in wanted.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise ValueError(f"ATTN_LAB_CHAPTERS names no chapter or unknown ones {unknown}: use 'all' or some of {known}")
    return names


CHAPTERS = _chapters(os.environ.get("ATTN_LAB_CHAPTERS", "01_softmax"))
# Notebook 7 (7.6 here) is not tested: at load its own code fails ("reading 'schema'", notebook_core), and then any
# key pressed in an output (ipywidgets' sliders as much as the attention viewer) moves the focus to the active cell.
# What a student types into the panels' boxes, by the box's label: a sentence, and a story typed on one line.
TYPED = {
    "source": "the dog sees the cat .",
    "sentence": "the cat sees the dog",
    "story": "Greg is a frog. Brian is a frog. Brian is yellow. Julius is a swan.",
    "question": "What color is Greg?",
}


# bertviz's views ask for require.js from this address when they run in a notebook; the static book serves a copy
# (book/_ext/offline_book.py), a live kernel cannot. Offline, JupyterLab shows them empty; the attention viewer beside
# each shows the same weights. The only request the Lab test lets fail.
BERTVIZ_CDN = "https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on a copy of the chapters: yields (base URL, token, folder); always shut down."""
    folder = tmp_path_factory.mktemp("lab")
    skip = shutil.ignore_patterns("*.ipynb", ".*", "conftest.py", "__pycache__")
    shutil.copytree(ROOT / "notebooks", folder / "notebooks", ignore=skip)  # the figures the chapters show
    for chapter in CHAPTERS:
        shutil.copy(ROOT / "notebooks" / f"{chapter}.ipynb", folder / "notebooks")
    token = secrets.token_hex(16)
    home = folder / "home"  # no settings, workspaces or news from the machine's own Jupyter
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "JUPYTER_CONFIG_DIR": str(home / "config"),
           "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"), "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
           "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "JUPYTER_DATA_DIR": str(home / "data")}  # fmt: skip
    env.pop("ATTN_PROGRESS", None)  # a reader's kernel: progress bars show
    news = home / "settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text('{"fetchNews": "false"}')  # no question about news from the internet
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
               "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={folder}",
               "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]  # fmt: skip
    if os.geteuid() == 0:  # CI's containers run as root
        command.append("--allow-root")
    server = None
    try:
        for _ in range(3):  # a free port may be taken before the server binds it: then another one
            base, server = _start(command + [f"--ServerApp.port={_free_port()}"], env, folder, token)
            if server.poll() is None:
                break
        assert server.poll() is None, f"JupyterLab did not start:\n{(folder / 'server.log').read_text()[-3000:]}"
        yield base, token, folder
    finally:
        if server is not None:
            _stop(server)


def _start(command: list[str], env: dict, folder, token: str):
    """Start the server; return its base URL once it answers (or once it has exited: the caller checks)."""
    port = command[-1].rpartition("=")[2]
    log = (folder / "server.log").open("w")
    # A session of its own: the server and its kernels form one process group, which _stop can kill together.
    out = subprocess.STDOUT
    server = subprocess.Popen(command, env=env, stdout=log, stderr=out, cwd=folder, start_new_session=True)
    log.close()
    base, deadline = f"http://127.0.0.1:{port}/", time.monotonic() + 90
    while server.poll() is None and time.monotonic() < deadline:
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{base}api/status?token={token}") as answer:
            if answer.status == 200:
                return base, server
        time.sleep(0.5)
    if server.poll() is None:
        _stop(server)
        raise RuntimeError(f"JupyterLab did not answer in 90 s:\n{(folder / 'server.log').read_text()[-3000:]}")
    return base, server


def _stop(server: subprocess.Popen) -> None:
    """Stop the server, and its kernels with it (its process group)."""
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def _open(browser, base: str, url: str):
    """A page on ``url``; requests outside the server are aborted; console errors collected in ``page.errors``."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, service_workers="block")
    page = context.new_page()
    page.errors = []
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith((base, "data:", "blob:")) else r.abort())
    page.on("console", lambda m: m.type == "error" and page.errors.append(f"console: {m.text} ({m.location['url']})"))
    page.on("pageerror", lambda e: page.errors.append(f"page error: {e}"))
    # What a student answers when JupyterLab asks for a kernel (it does when the kernel list comes late, as on a
    # busy machine): the default one.
    kernel = page.locator(".jp-Dialog").filter(has_text="Select Kernel")
    page.add_locator_handler(kernel, lambda d: d.locator(".jp-Dialog-button.jp-mod-accept").click())
    page.goto(url)
    return page


def _menu(page, menu: str, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=menu).first.click()
    page.locator(".lm-Menu-itemLabel", has_text=item).first.click()


def _until(page, menu: str, item: str, shown: str, tries: int = 6) -> None:
    """``menu`` ▸ ``item``, again every 20 s until the page shows its effect (the function ``shown`` is true)."""
    for _ in range(tries):
        _menu(page, menu, item)
        try:
            page.wait_for_function(shown, timeout=20_000)
            return
        except PlaywrightTimeoutError:
            page.keyboard.press("Escape")  # a menu left open
    raise AssertionError(f"{menu} ▸ {item} showed no effect in {tries} tries ({20 * tries} s)")


def _run_all(page, cells: int) -> None:
    """Edit ▸ Clear Outputs of All Cells (the saved outputs carry execution counts too), Run ▸ Run All Cells,
    then wait until every code cell has an execution count again."""
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    # On a busy machine the notebook can still be loading when the menu is first used, and the command does
    # nothing: use it again until it shows, as a student would.
    cleared = (
        "() => ![...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].some(p => /\\d/.test(p.textContent))"
    )
    _until(page, "Edit", "Clear Outputs of All Cells", cleared)
    started = (
        "() => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].some(p => /[*\\d]/.test(p.textContent))"
    )
    _until(page, "Run", "Run All Cells", started)
    done = """(n) => { const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
        .map(p => p.textContent.trim());
      return prompts.length === n && prompts.every(t => /^\\[\\d+\\]:$/.test(t)); }"""
    deadline = time.monotonic() + 540
    while not page.evaluate(done, cells):
        raised = [t for t in _stderr(page) if "Traceback" in t]  # the cells after it never run: say so now
        assert not raised, f"a cell raised:\n{raised[0][-3000:]}"
        assert time.monotonic() < deadline, "Run All did not finish in 9 minutes"
        expect(page.locator(".jp-Notebook")).to_be_visible()  # answers a dialog that came up (see _open)
        time.sleep(0.5)


def _stderr(page) -> list[str]:
    return page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").all_text_contents()


def _active_cell(page) -> int:
    return page.evaluate("() => [...document.querySelectorAll('.jp-Cell')].findIndex(c =>"
                         " c.classList.contains('jp-mod-active'))")  # fmt: skip


def _shown(panel) -> str:
    """What a panel shows now: its figure's source and its readout text."""
    return panel.evaluate(
        "p => [...p.querySelectorAll('.widget-html-content')].map(h => { const i = h.querySelector('img');"
        " return i ? i.getAttribute('src').slice(-200) : h.textContent; }).join('|')"
    )


def _settled(panel) -> str:
    """What the panel shows once it has stopped changing for a second (a drag sends several values)."""
    shown, since, deadline = _shown(panel), time.monotonic(), time.monotonic() + 30
    while time.monotonic() - since < 1.0 and time.monotonic() < deadline:
        time.sleep(0.2)
        now = _shown(panel)
        if now != shown:
            shown, since = now, time.monotonic()
    return shown


def _changes(panel, action, what: str) -> None:
    before = _settled(panel)
    action()
    for _ in range(120):  # the kernel redraws: up to 30 s for a panel that runs a model
        if _shown(panel) != before:
            return
        time.sleep(0.25)
    raise AssertionError(f"{what}: the panel did not change")


def _use_panel(page, panel, name: str) -> None:
    """Every slider by keyboard and by mouse, every text box by typing; each must change the panel."""
    panel.scroll_into_view_if_needed()
    image = panel.locator(".widget-html-content img")
    if image.count():
        alt = image.first.get_attribute("alt") or ""
        assert len(alt) > 20 and not alt.endswith(".png"), f"{name}: the panel's plot has no alt text"
        width = image.first.evaluate("i => [i.naturalWidth, i.getBoundingClientRect().width]")
        assert width[1] <= width[0] + 1, f"{name}: the plot is stretched ({width[0]} px drawn at {width[1]})"
    handles = panel.locator(".widget-slider .noUi-handle")
    for k in range(handles.count()):
        handle = handles.nth(k)
        now, low, high = (float(handle.get_attribute(f"aria-value{a}")) for a in ("now", "min", "max"))
        up = now < (low + high) / 2  # towards the middle: a slider may start at either end
        handle.focus()
        key = "ArrowRight" if up else "ArrowLeft"
        _changes(panel, lambda h=handle, key=key: h.press(key), f"{name}: slider {k + 1}, {key}")
        box = handle.bounding_box()
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2

        def drag(x=x, y=y, dx=40 if up else -40):
            page.mouse.move(x, y)
            page.mouse.down()
            page.mouse.move(x + dx, y, steps=5)
            page.mouse.up()

        _changes(panel, drag, f"{name}: slider {k + 1}, mouse")
    menus = panel.locator(".widget-dropdown select")
    for k in range(menus.count()):
        menu = menus.nth(k)
        options = menu.locator("option").evaluate_all("os => os.map(o => o.value)")
        if len(options) > 1:
            _changes(panel, lambda m=menu, v=options[-1]: m.select_option(v), f"{name}: drop-down {k + 1}")
    boxes = panel.locator(".widget-text, .widget-textarea")
    for k in range(boxes.count()):
        label = boxes.nth(k).locator(".widget-label").text_content().strip()
        if label not in TYPED:
            continue
        field = boxes.nth(k).locator("input, textarea").first
        _changes(panel, lambda f=field, t=TYPED[label]: (f.fill(t), f.press("Tab")), f"{name}: typing a {label}")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_runs_and_answers_in_jupyterlab(lab, browser, chapter):
    base, token, folder = lab
    cells = sum(c.cell_type == "code" for c in nbformat.read(folder / "notebooks" / f"{chapter}.ipynb", 4).cells)
    # ?reset: JupyterLab's workspace starts empty, no tab of an earlier chapter comes back
    page = _open(browser, base, f"{base}lab/tree/notebooks/{chapter}.ipynb?reset&token={token}")
    try:
        _run_all(page, cells)
        outputs = " ".join(page.locator(".jp-OutputArea").all_text_contents())
        assert "Error displaying widget" not in outputs and "VBox(children" not in outputs
        assert not any("Traceback" in t for t in _stderr(page)), "a cell raised"
        panels = page.locator(".jp-OutputArea-output .widget-vbox").filter(has=page.locator(".widget-html"))
        panels = [panels.nth(k) for k in range(panels.count())]
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        for k, panel in enumerate(panels):
            _use_panel(page, panel, f"{chapter}, panel {k + 1}")
            panel.screenshot(path=str(SCREENSHOTS / f"{chapter}_panel{k + 1}.png"))
        viewers = page.locator(".attn-viewer")
        for k in range(viewers.count()):
            viewer = viewers.nth(k)
            viewer.scroll_into_view_if_needed()
            page.mouse.move(0, 0)  # no pointer left over a cell when focusing scrolls (check_viewer starts from none)
            viewer.locator(".av-grid").focus()
            active = _active_cell(page)
            check_viewer(page, viewer)  # the grid's arrow keys, hovering, the sliders and the example menu
            for slider in viewer.locator("input.av-axis").all():
                slider.fill("0")
                slider.focus()
                for key, value in (("ArrowRight", "1"), ("ArrowLeft", "0"), ("ArrowUp", "1"), ("ArrowDown", "0")):
                    slider.press(key)  # JupyterLab's command mode takes ArrowUp and ArrowDown to move between cells
                    assert slider.input_value() == value, f"{chapter}, viewer {k + 1}: {key} did not move it"
            assert _active_cell(page) == active, f"{chapter}, viewer {k + 1}: an arrow key moved the selected cell"
        assert panels or viewers.count(), f"{chapter}: nothing to use, the checks above were vacuous"
        errors = page.errors
        if page.locator("[id^='bertviz-']").count():  # bertviz loads require.js from cdnjs in a live notebook: offline
            errors = [e for e in errors if not e.endswith(f"({BERTVIZ_CDN})")]  # (and here) its views stay empty
        assert errors == [], "\n".join(errors)
    finally:
        with contextlib.suppress(Exception):  # whatever failed above is the error to report, not these
            page.screenshot(path=str(SCREENSHOTS / f"{chapter}_page.png"))
            page.context.close()
        with contextlib.suppress(OSError):
            _shut_down_kernels(base, token)


def _shut_down_kernels(base: str, token: str) -> None:
    """End every session the test started (its kernel holds the chapter's models), as closing the tab does not."""
    headers = {"Authorization": f"token {token}"}
    with urllib.request.urlopen(urllib.request.Request(f"{base}api/sessions", headers=headers)) as answer:
        sessions = json.load(answer)
    for session in sessions:
        request = urllib.request.Request(f"{base}api/sessions/{session['id']}", headers=headers, method="DELETE")
        urllib.request.urlopen(request).close()
