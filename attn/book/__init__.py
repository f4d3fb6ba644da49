"""The book's own machinery, apart from the models: what a chapter claims about a trained model, checked against a
bound (:mod:`attn.book.claims`), and the exercises' student versions and autograder helpers
(:mod:`attn.book.grading`, ``python -m attn.book.grading``). The schematics are drawn at build time by
``book/diagrams.py`` in the repository, not by the package."""
