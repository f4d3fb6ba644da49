"""How a chapter shows a result table and the library's code: as text, which nbval compares and a terminal prints,
and as HTML for the online book, which reads on a phone.

A printed table wraps mid-row on a narrow screen; :func:`table` keeps its columns (an HTML table whose cells wrap,
scrolling inside its own box if it is still too wide). Printed source is long and plain; :func:`show_source` shows
it highlighted and folded, under a line naming the function and its file, for the reader to open::

    table(["model", "accuracy"], [["ViT", "48.6%"], ["CNN", "96.0%"]])
    show_source(attn.scaled_dot_product_attention)
"""

from __future__ import annotations

import ast
import html
import inspect
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from attn._checks import check, checked

__all__ = ["Source", "Table", "show_source", "table"]


def _text(cell: object) -> str:
    """A cell as text: counts with thousands separators, everything else as ``str`` gives it."""
    if isinstance(cell, int) and not isinstance(cell, bool):
        return f"{cell:,}"
    return str(cell)


@dataclass(frozen=True)
class Table:
    """Rows under a header, shown as an aligned text table and as an HTML table."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str | None = None

    def __post_init__(self) -> None:
        check(self.header, "header must name at least one column, got none")
        ragged = [i for i, row in enumerate(self.rows) if len(row) != len(self.header)]
        check(not ragged, lambda: f"row {ragged[0]} has {len(self.rows[ragged[0]])} cells but the header has "
              f"{len(self.header)} columns: {self.rows[ragged[0]]!r}")  # fmt: skip
        check(self.caption is None or isinstance(self.caption, str),
              lambda: f"caption must be a string, got {type(self.caption).__name__}")  # fmt: skip

    def __str__(self) -> str:
        lines = [self.header, *self.rows]
        widths = [max(len(row[i]) for row in lines) for i in range(len(self.header))]
        text = [" | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in lines]
        text.insert(1, "-+-".join("-" * w for w in widths))
        return "\n".join(([self.caption] if self.caption else []) + text)

    def _repr_html_(self) -> str:
        cells = lambda row, tag: "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in row)  # noqa: E731
        caption = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        body = "".join(f"<tr>{cells(row, 'td')}</tr>" for row in self.rows)
        return (
            "<div class='attn-table' style='overflow-x:auto;max-width:100%'"
            " tabindex='0' role='group' aria-label='table (scrolls sideways on a narrow screen)'>"
            f"<table>{caption}<thead><tr>{cells(self.header, 'th')}</tr></thead>"
            f"<tbody>{body}</tbody></table></div>"
        )

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": str(self), "text/html": self._repr_html_()}


def table(header: Sequence[object], rows: Iterable[Sequence[object]], caption: str | None = None) -> Table:
    """A result table (display it; ``print`` gives the text alone). Cells are shown as ``str`` gives them."""
    return Table(tuple(_text(h) for h in header), tuple(tuple(_text(c) for c in row) for row in rows), caption)


@dataclass(frozen=True)
class Source:
    """A function's or class's source, with its name and where it is: text, and folded highlighted HTML."""

    name: str
    file: str
    first: int
    code: str
    opened: bool = False

    @property
    def where(self) -> str:
        """``file, lines a-b``."""
        last = self.first + self.code.rstrip("\n").count("\n")
        return f"{self.file}, lines {self.first}-{last}"

    def __str__(self) -> str:
        return self.code.rstrip("\n")

    def _repr_html_(self) -> str:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer

        code = highlight(self.code, PythonLexer(), HtmlFormatter(cssclass="highlight"))
        return (
            f"<details class='attn-source'{' open' if self.opened else ''}>"
            f"<summary><code>{html.escape(self.name)}</code> "
            f"<span class='attn-source-where'>{html.escape(self.where)}</span></summary>"
            f"<div class='highlight-python notranslate'>{code}</div></details>"
        )

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": str(self), "text/html": self._repr_html_()}


def _short_file(path: str) -> str:
    """The file's path from the package's parent (``attn/blocks/attention.py``), or its name outside it."""
    parts = Path(path).parts
    return "/".join(parts[parts.index("attn") :]) if "attn" in parts else Path(path).name


def _show_source_args(obj: object, body: bool = False) -> None:
    check(isinstance(body, bool), lambda: f"body must be True or False, got {body!r}")


@checked(_show_source_args)
def show_source(obj: object, body: bool = False) -> Source:
    """The source of a function, method or class of the library (display it to fold it in the book); with
    ``body=True`` only what follows its signature and docstring, shown open (a body the prose reads line by line)."""
    target: Any = inspect.unwrap(obj) if callable(obj) else obj  # anything: inspect raises TypeError if no source
    try:
        lines, first = inspect.getsourcelines(target)
        file = inspect.getsourcefile(target)
    except (TypeError, OSError) as error:
        raise ValueError(f"obj must be a function, method or class with source on file, got {obj!r}: {error}") from None
    name = getattr(target, "__qualname__", getattr(target, "__name__", repr(target)))
    if body:
        skip = _header_lines(lines)
        check(skip < len(lines), lambda: f"obj has no body after its signature and docstring: {name}")
        lines, first = lines[skip:], first + skip
    return Source(name, _short_file(file or "?"), first, "".join(lines), opened=body)


def _header_lines(lines: list[str]) -> int:
    """How many of a definition's source lines its decorators, signature and docstring take."""
    tree = ast.parse(textwrap.dedent("".join(lines)))
    definition = tree.body[0]
    if not isinstance(definition, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return 0
    first = definition.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        skip = cast(int, first.end_lineno)  # the docstring's last line (ast.parse sets it on every node)
    else:
        skip = first.lineno - 1
    while skip < len(lines) and not lines[skip].strip():  # blank lines after the docstring
        skip += 1
    return skip
