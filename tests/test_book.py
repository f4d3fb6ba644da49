"""The book builds offline, with warnings as errors, from the committed outputs."""


def test_book_builds_with_warnings_as_errors(built_book):
    html = built_book
    chapters = ("01_softmax", "02_alignment", "03_memory_networks", "04_memory_that_writes", "05_self_attention",
                "06_multi_head", "07_positions", "08_transformer", "09_images", "10_pretraining",
                "11_pretrained", "12_scale", "13_explain")  # fmt: skip
    pages = ("index.html", "book/intro.html", "book/instructors.html", *(f"notebooks/{c}.html" for c in chapters))
    for page in pages:
        assert (html / page).is_file(), page
    chapter = (html / "notebooks/01_softmax.html").read_text()
    assert "Softmax and attention as soft lookup" in chapter
    assert "data:image/png" in chapter or "_images/" in chapter  # figures from the committed outputs
    assert "Vaswani" in chapter  # citations resolved from book/references.bib
    alignment = (html / "notebooks/02_alignment.html").read_text()
    assert "Learning to align" in alignment and "Bahdanau" in alignment
    assert "data:image/png" in alignment or "_images/" in alignment
    memory = (html / "notebooks/03_memory_networks.html").read_text()
    assert "Memory networks" in memory and "Sukhbaatar" in memory and "Weston" in memory
    for page, title, cited in [
        ("04_memory_that_writes", "Memory that writes", "Graves"),
        ("05_self_attention", "Self-attention", "Schmidhuber"),
        ("06_multi_head", "Multi-head attention", "Michel"),
        ("07_positions", "Positions", "Gehring"),
        ("08_transformer", "The Transformer", "Xiong"),
        ("09_images", "Attention for images", "Dosovitskiy"),
        ("10_pretraining", "Pretraining objectives: GPT and BERT", "Devlin"),
        ("11_pretrained", "Inside a pretrained model", "Olsson"),
        ("12_scale", "Attention at scale", "Katharopoulos"),
        ("13_explain", "Does attention explain the answer?", "Jain"),
    ]:
        text = (html / f"notebooks/{page}.html").read_text()
        assert title in text and cited in text, page
        assert "data:image/png" in text or "_images/" in text, page


def test_built_pages_reference_no_cdn_and_stay_small(built_book):
    """Static half of the offline check (tests/browser loads the pages): no CDN named anywhere, the vendored
    JavaScript shipped, no page's HTML over 3 MB."""
    for name in ("vendor/requirejs/require.js", "vendor/mathjax/tex-mml-chtml.js", "vendor/html-manager/embed-amd.js",
                 "vendor/d3/d3.min.js", "vendor/jquery/jquery.min.js", "attn-widgets.js", "attn-book.css"):  # fmt: skip
        assert (built_book / "_static" / name).is_file(), name
    pages = [p for p in built_book.rglob("*.html") if "_static" not in p.parts]
    assert len(pages) >= 15
    for page in pages:
        text = page.read_text()
        for cdn in ("cdnjs.cloudflare.com", "cdn.jsdelivr.net", "unpkg.com"):
            assert cdn not in text, f"{page.name} names {cdn}"
        assert page.stat().st_size <= 3_000_000, page.name
    widgets = (built_book / "notebooks/02_alignment.html").read_text()
    assert widgets.count("attn-kernel-note") == widgets.count('type="application/vnd.jupyter.widget-view+json"') > 0
