"""The book's own machinery, apart from the models: what a chapter claims about a trained model, checked against a
bound (:mod:`attn.book.claims`); the exercises' student versions and autograder helpers (:mod:`attn.book.grading`,
``python -m attn.book.grading``); the rules a student's cell must keep so that it cannot change the grading
(:mod:`attn.book.tampering`), and the nbgrader preprocessor that applies them before a submission runs
(:mod:`attn.book.preprocessors`). The schematics are drawn at build time by ``book/diagrams.py`` in the repository,
not by the package.

Importing this package takes the grader's first look at torch and attn (:func:`attn.book.tampering.changes`
compares with it), which is why the chapters import :mod:`attn.book.claims` in their first cell."""

from attn.book import tampering  # noqa: F401 (the grader's first look at the library, before any exercise)
