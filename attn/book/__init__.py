"""The book's own machinery, apart from the models: what a chapter claims about a trained model, checked against a
bound (:mod:`attn.book.claims`); the exercises' student versions and autograder helpers (:mod:`attn.book.grading`,
``python -m attn.book.grading``); the rules a student's cell must keep so that it cannot change the grading
(:mod:`attn.book.tampering`), and the nbgrader preprocessor that applies them before a submission runs
(:mod:`attn.book.preprocessors`). The schematics are drawn at build time by ``book/diagrams.py`` in the repository,
not by the package.

Importing it changes nothing: a chapter takes the grader's first look at torch and attn by calling
:func:`attn.book.tampering.snapshot` in its first (locked) cell, and :func:`attn.book.tampering.changes` compares
with that."""
