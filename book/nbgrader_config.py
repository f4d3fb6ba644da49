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
