"""The character classes of BERT's tokenizer, as the ``tokenizers`` library has them, for attn/viz/wordpiece.js.

The browser's tokenizer (chapter 11's live view) must give exactly the ids of the Python one. Which characters
BERT drops (control, format, private use), blanks (whitespace), splits off (punctuation), strips after NFD
(non-spacing marks) and isolates (CJK ideographs) depends on the Unicode tables compiled into ``tokenizers``, not
on the browser's: they are older (a punctuation mark added in Unicode 14 is not split, an unassigned code point is
kept). So the classes are read off the library itself, code point by code point, and written into wordpiece.js
between its ``TABLES`` markers. Run it after changing the ``tokenizers`` version: ``python book/wordpiece_tables.py``
(tests/test_live.py checks that the tables are current).
"""

from __future__ import annotations

import re
from pathlib import Path

from tokenizers.normalizers import BertNormalizer
from tokenizers.pre_tokenizers import BertPreTokenizer

SCRIPT = Path(__file__).resolve().parents[1] / "attn" / "viz" / "wordpiece.js"
BEGIN, END = "// BEGIN TABLES (book/wordpiece_tables.py)\n", "// END TABLES\n"


def classes() -> dict[str, list[tuple[int, int]]]:
    """Each class as sorted, disjoint, inclusive ranges of code points (surrogates excluded: not characters)."""
    clean = BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False, lowercase=False)
    strip = BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False)
    chinese = BertNormalizer(clean_text=False, handle_chinese_chars=True, strip_accents=False, lowercase=False)
    split = BertPreTokenizer()
    members: dict[str, list[int]] = {"drop": [], "space": [], "mark": [], "punct": [], "cjk": []}
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        cleaned = clean.normalize_str(c)
        if cleaned == "":
            members["drop"].append(cp)
        elif cleaned == " ":
            members["space"].append(cp)
        if strip.normalize_str(c) == "":
            members["mark"].append(cp)
        if chinese.normalize_str(c) != c:
            members["cjk"].append(cp)
        if [w for w, _ in split.pre_tokenize_str("a" + c + "a")] == ["a", c, "a"]:
            members["punct"].append(cp)
    return {name: _ranges(cps) for name, cps in members.items()}


def _ranges(cps: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for cp in cps:
        if out and out[-1][1] == cp - 1:
            out[-1] = (out[-1][0], cp)
        else:
            out.append((cp, cp))
    return out


def encoded(ranges: list[tuple[int, int]]) -> str:
    """Ranges as base-36 numbers: the gap from the previous range's end, then the length minus one, alternating."""
    numbers, end = [], -1
    for a, b in ranges:
        numbers += [a - end - 1, b - a]
        end = b
    return ",".join(_base36(n) for n in numbers)


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def block() -> str:
    """The lines between the markers in wordpiece.js."""
    lines = [f'  {name}: "{encoded(ranges)}",\n' for name, ranges in classes().items()]
    return BEGIN + "var TABLES = {\n" + "".join(lines) + "};\n" + END


def current(script: str) -> str:
    """The table block now in ``script`` (the text of wordpiece.js)."""
    found = re.search(re.escape(BEGIN) + ".*?" + re.escape(END), script, re.S)
    if found is None:
        raise SystemExit(f"{SCRIPT} lacks the markers {BEGIN.strip()!r} ... {END.strip()!r}")
    return found.group(0)


def main() -> None:
    script = SCRIPT.read_text(encoding="utf-8")
    SCRIPT.write_text(script.replace(current(script), block()), encoding="utf-8")


if __name__ == "__main__":
    main()
