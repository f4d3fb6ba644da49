"""The live view's WordPiece tokenizer (attn/viz/wordpiece.js) in Chromium gives the ids and tokens of Python's
``attn.pretrained.encode`` (the ``tokenizers`` library), on awkward text and on every Unicode character."""

from __future__ import annotations

import shutil
from importlib import resources

import pytest
from browser_utils import opened

from attn.pretrained import ModelNotInstalledError, encode, load_tokenizer, model_dir

LIMIT = 128  # a limit below the live model's (attn.pretrained.MAX_TOKENS, tested too), [CLS] and [SEP] included

STRINGS = [
    "The cat sat on the mat.",
    "café naïve Ångström résumé Straße ÉCOLE Øresund",  # accents stripped, ß kept
    "unaffable tokenization hyperparameters",  # word pieces
    "Hello, world! (x+y)=z; 'single' \"double\" a-b_c ~tilde` {braces} [brackets] @#$%^&*|\\/<>?",
    "3.14159, 1,000,000 and 2026-05-09 at 10:30; ½ ² ① ٣",  # digits, also not ASCII
    "日本語のテキスト 中文分词 한국어 ひらがな カタカナ",  # CJK split per ideograph, Hangul and kana not
    "emoji 😀👍🏽 🥺 family 👨\u200d👩\u200d👧 flag 🇫🇷 ❤️",
    " mixed\twhite\n\nspace\r\n  lines\u00a0nbsp\u2003em\u3000ideographic  ",
    "ctrl\x00nul\x01\x07bell\x1b[0m\ufffdreplacement\u200bzwsp\u200dzwj\ufeffbom\u00adsoft\x7fdel end",
    "",
    "   ",
    "<script>alert(1)</script> <img src=x onerror=alert(1)> &amp; &lt;",
    "שלום עולם مرحبا بالعالم \u202eevil\u202c \u2067isolate\u2069",  # right-to-left text and controls
    "x[MASK]y [CLS] [mask] [SEP][PAD][UNK] [ CLS]",  # special tokens typed in the text stay whole
    "ΟΔΟΣ İstanbul ǅ ẞ ﬁ ﬀ Ⅻ ㎏ ＡＢＣ",  # case mapping per character, compatibility characters kept
    "a\u0378b x\u2e5dy \U000e0001tag \ue000private \U0001f8b0",  # unassigned, new punctuation, tag, private use
    "e\u0301 a\u0308\u0323 \u0345 \u1dc0x",  # combining marks alone and stacked
    "supercalifragilisticexpialidocious " + "a" * 100 + " " + "b" * 101 + " " + "é" * 101,  # 100 characters
    "don't won't y'all rock'n'roll e.g. U.S.A. co-operate",
    " ".join(["word"] * 600),  # truncated
    " ".join(f"token{i} naïveté" for i in range(300)),  # truncated inside a word's pieces
]


@pytest.fixture(scope="module")
def tokenizer_site(tmp_path_factory):
    """A folder with wordpiece.js, the checkpoint's vocab.txt and a page that loads both."""
    try:
        vocab = model_dir() / "vocab.txt"
    except ModelNotInstalledError as e:
        pytest.skip(str(e))
    folder = tmp_path_factory.mktemp("wordpiece")
    shutil.copyfile(vocab, folder / "vocab.txt")
    (folder / "wordpiece.js").write_text(resources.files("attn.viz").joinpath("wordpiece.js").read_text("utf-8"))
    (folder / "page.html").write_text(
        "<!doctype html><meta charset='utf-8'><title>wordpiece</title><script src='wordpiece.js'></script>"
        "<script>window.vocab = fetch('vocab.txt').then(r => r.text()).then(attnWordPiece.vocabulary);</script>"
    )
    return folder


def in_browser(page, strings: list[str], limit: float) -> list[dict]:
    # JSON has no Infinity: a limit over 1e9 means none
    return page.evaluate(
        "async ([strings, limit]) => { const v = await window.vocab;"
        " return strings.map(s => attnWordPiece.encode(v, s, limit > 1e9 ? Infinity : limit)); }",
        [strings, limit],
    )


def python(strings: list[str], limit: int | None) -> list[tuple[list[str], list[int]]]:
    tokenizer = load_tokenizer()
    if limit is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(limit)
    out = []
    for s in strings:
        e = encode(tokenizer, s)
        out.append((e.tokens[0], e.ids[0].tolist()))
    return out


def test_awkward_strings_give_the_ids_and_tokens_of_the_python_tokenizer(tokenizer_site, serve, browser):
    with opened(browser, serve(tokenizer_site), "page.html") as visit:
        for limit, page_limit in ((LIMIT, LIMIT), (None, 2e9)):
            got = in_browser(visit.page, STRINGS, page_limit)
            for s, (tokens, ids), js in zip(STRINGS, python(STRINGS, limit), got, strict=True):
                assert js["tokens"] == tokens, s[:80]
                assert js["ids"] == ids, s[:80]
                assert js["truncated"] == (limit is not None and js["total"] > limit)
        # encode(load_tokenizer(), s) as the library ships it (truncated at attn.pretrained.MAX_TOKENS)
        default = load_tokenizer()
        got = in_browser(visit.page, STRINGS, default.truncation["max_length"])
        for s, js in zip(STRINGS, got, strict=True):
            assert js["ids"] == encode(default, s).ids[0].tolist(), s[:80]
        assert visit.errors == [] and visit.external == [] and visit.dialogs == []


def test_the_awkward_cases_are_what_they_claim(tokenizer_site, serve, browser):
    """The strings above exercise what they say: pieces, stripped accents, dropped controls, truncation."""
    with opened(browser, serve(tokenizer_site), "page.html") as visit:
        got = {s: js for s, js in zip(STRINGS, in_browser(visit.page, STRINGS, LIMIT), strict=True)}
        assert "##ffa" in got["unaffable tokenization hyperparameters"]["tokens"]
        assert "cafe" in got[STRINGS[1]]["tokens"] and "naive" in got[STRINGS[1]]["tokens"]
        assert got[""]["tokens"] == ["[CLS]", "[SEP]"] and got["   "]["tokens"] == ["[CLS]", "[SEP]"]
        assert "[MASK]" in got[STRINGS[13]]["tokens"] and "mask" in got[STRINGS[13]]["tokens"]
        assert ["<", "script", ">"] == got[STRINGS[11]]["tokens"][1:4]
        long = got[" ".join(["word"] * 600)]
        assert long["truncated"] and long["total"] == 602 and len(long["tokens"]) == LIMIT
        assert long["tokens"][-1] == "[SEP]" and long["tokens"][-2] == "word"
        # controls, format characters, U+FFFD and NUL vanish (the words around them join); the rest is read
        kept = "".join(t.removeprefix("##") for t in got[STRINGS[8]]["tokens"][1:-1])
        assert kept == "ctrlnulbell[0mreplacementzwspzwjbomsoftdelend"


def test_every_character_gives_the_ids_of_the_python_tokenizer(tokenizer_site, serve, browser):
    """All 1,112,064 code points, alone between spaces and inside a word: the character classes (wordpiece.js's
    tables), NFD, accents and lower-casing agree with the library's for every one."""
    cps = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
    alone = [" ".join(chr(c) for c in cps[i : i + 8192]) for i in range(0, len(cps), 8192)]
    inside = ["".join(f"a{chr(c)}b " for c in cps[i : i + 8192]) for i in range(0, 0x40000, 8192)]
    chunks = alone + inside
    expected = python(chunks, None)
    with opened(browser, serve(tokenizer_site), "page.html") as visit:
        got = in_browser(visit.page, chunks, 2e9)
        for chunk, (_, ids), js in zip(chunks, expected, got, strict=True):
            if js["ids"] != ids:  # name the characters
                words = [w for w in chunk.split(" ") if w]
                pairs = zip(python(words, None), in_browser(visit.page, words, 2e9), strict=True)
                differ = [w for w, ((_, want), one) in zip(words, pairs, strict=True) if one["ids"] != want]
                pytest.fail(f"tokenized differently: {[[hex(ord(c)) for c in w] for w in differ[:10]]}")
