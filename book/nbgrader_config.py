# nbgrader_config.py for a course that grades the book's chapters (see "For instructors").
# Put it at the top of the course folder, next to source/; run nbgrader from there.
c = get_config()  # noqa: F821 (nbgrader provides get_config)

c.CourseDirectory.root = "."
c.CourseDirectory.course_id = "attention"
# Autograding runs every cell of the chapter again: allow for the slowest training cell on a small machine
# (nbgrader's default is 30 s per cell).
c.ExecutePreprocessor.timeout = 300
# Students may not change the autograder cells; nbgrader restores them from their checksums.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
# A student's cell that could change the grading (patch torch or attn, rebind a name the chapter's cells use, reach
# sys, gc, frames or the grader) is not run: attn.book.preprocessors.RefuseTampering replaces it with an error that
# says why (see "What the autograder can and cannot stop" on the instructors' page). Every chapter cell but the
# solutions is locked, so nbgrader restores it from its checksum before this runs.
c.Autograde.sanitize_preprocessors = [
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "nbgrader.preprocessors.OverwriteCells",
    "nbgrader.preprocessors.CheckCellMetadata",
    "attn.book.preprocessors.RefuseTampering",
]
