"""Vendor the JavaScript the static book needs, from the npm registry, at pinned versions.

The book must work offline: MathJax, require.js, the ipywidgets HTML manager and bertviz's d3 and jQuery are
served from ``_static/vendor`` instead of CDNs. This script refreshes ``book/assets/vendor`` from ``npm pack``
(each tarball checked against the pinned sha512 integrity) and writes ``MANIFEST.txt`` (sha256 of every
file), which ``tests/test_offline_book.py`` checks. Run it only to change a version: ``python book/vendor.py``.

The folder is deliberately not called ``_static``: Jupyter Book 1 adds a script tag for every ``.js`` file
under a ``_static`` folder, which would load d3 outside require.js and break the widgets.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from fnmatch import fnmatch
from pathlib import Path

VENDOR = Path(__file__).parent / "assets" / "vendor"

# npm spec -> (sha512 integrity of the tarball, files kept (globs under package/), target folder)
PACKAGES = {
    "requirejs@2.3.8": (
        "sha512-7/cTSLOdYkNBNJcDMWf+luFvMriVm7eYxp4BcFCsAX0wF421Vyce5SXP17c+Jd5otXKGNehIonFlyQXSowL6Mw==",
        ["require.js", "README.md"],
        "requirejs",
    ),
    "d3@5.7.0": (
        "sha512-8KEIfx+dFm8PlbJN9PI0suazrZ41QcaAufsKE9PRcqYPWLngHIyWJZX96n6IQKePGgeSu0l7rtlueSSNq8Zc3g==",
        ["dist/d3.min.js", "LICENSE"],
        "d3",
    ),
    # bertviz asks for jQuery 2.0.0, which is not on npm; 2.2.4 is the last 2.x release and works the same.
    "jquery@2.2.4": (
        "sha512-lBHj60ezci2u1v2FqnZIraShGgEXq35qCzMv4lITyHGppTnA13rwR0MgwyNJh9TnDs3aXUvd1xjAotfraMHX/Q==",
        ["dist/jquery.min.js", "LICENSE.txt"],
        "jquery",
    ),
    # The manager myst-nb loads for ipywidgets 8 (its default is 1.0.6 from jsdelivr); the fonts are Font
    # Awesome's, loaded only if a widget shows an icon (browsers take woff2 first).
    "@jupyter-widgets/html-manager@1.0.15": (
        "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA==",
        ["dist/embed-amd.js", "dist/embed.js.LICENSE.txt", "dist/*.woff2", "dist/*.woff", "package.json"],
        "html-manager",
    ),
    # The component Sphinx loads by default (tex-mml-chtml), its CommonHTML fonts and the TeX extensions it
    # loads on demand (\boldsymbol, \cancel, ...).
    "mathjax@3.2.2": (
        "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
        ["es5/tex-mml-chtml.js", "es5/input/tex/extensions/*", "es5/output/chtml/fonts/woff-v2/*", "LICENSE"],
        "mathjax",
    ),
    # Chapter 11's live view runs the model in the reader's browser (attn/viz/live.js): the classic-script build
    # for WebAssembly only, its loader module and the single-threaded-capable SIMD binary it fetches. The tarball
    # has no LICENSE file (the header of ort.wasm.min.js and package.json name the MIT licence): LICENSES below
    # writes the licence's text beside the files.
    "onnxruntime-web@1.30.0": (
        "sha512-q0y+JrrtukXSzsBWEMccVfqX25LRmosXHF+CaRJmg8pZClzcV7svNc4rKY3jL02Vb7QmRMDs1SigqR4CXAfKYQ==",
        ["dist/ort.wasm.min.js", "dist/ort-wasm-simd-threaded.mjs", "dist/ort-wasm-simd-threaded.wasm", "package.json"],
        "onnxruntime-web",
    ),
}


# The licence text of a package whose tarball carries none, written as LICENSE in its folder.
LICENSES = {
    "onnxruntime-web@1.30.0": """MIT License

Copyright (c) Microsoft Corporation

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
""",
}


def _integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def fetch(spec: str, integrity: str, keep: list[str], target: Path, work: Path) -> list[Path]:
    """``npm pack`` one package, check its integrity, copy the kept files; returns the files written."""
    out = subprocess.run(
        ["npm", "pack", spec, "--json", "--pack-destination", str(work)], capture_output=True, text=True, check=True
    )
    tarball = work / json.loads(out.stdout)[0]["filename"]
    got = _integrity(tarball.read_bytes())
    if got != integrity:
        raise SystemExit(f"{spec}: integrity {got} does not match the pinned {integrity}")
    written = []
    with tarfile.open(tarball) as tar:
        for member in tar.getmembers():
            name = member.name.removeprefix("package/")
            if member.isfile() and any(fnmatch(name, pattern) for pattern in keep):
                # Flatten dist/ and es5/ so that the paths the book uses stay short.
                relative = name.removeprefix("dist/").removeprefix("es5/")
                path = target / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(tar.extractfile(member).read())
                written.append(path)
    return written


def manifest(root: Path = VENDOR) -> dict[str, str]:
    """sha256 of every vendored file, by path relative to ``root`` (MANIFEST.txt itself excluded)."""
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.name != "MANIFEST.txt"
    }


def main() -> None:
    if shutil.which("npm") is None:
        raise SystemExit("npm is needed to refresh the vendored files (they are committed; the book does not need it)")
    with tempfile.TemporaryDirectory() as work:
        fresh = Path(work) / "vendor"  # filled completely before it replaces the committed folder
        for spec, (integrity, keep, folder) in PACKAGES.items():
            files = fetch(spec, integrity, keep, fresh / folder, Path(work))
            if spec in LICENSES:
                (fresh / folder / "LICENSE").write_text(LICENSES[spec])
                files.append(fresh / folder / "LICENSE")
            size = sum(f.stat().st_size for f in files)
            print(f"{spec:40s} {len(files):3d} files {size / 1e6:6.2f} MB", file=sys.stderr)
        lines = [f"# {spec} {integrity}" for spec, (integrity, _, _) in PACKAGES.items()]
        lines += [f"{digest}  {name}" for name, digest in manifest(fresh).items()]
        (fresh / "MANIFEST.txt").write_text("\n".join(lines) + "\n")
        shutil.rmtree(VENDOR, ignore_errors=True)
        shutil.copytree(fresh, VENDOR)


if __name__ == "__main__":
    main()
