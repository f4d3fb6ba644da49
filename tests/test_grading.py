import nbformat
import pytest
from notebook_utils import NOTEBOOKS

from attn.grading import main, write_assignments


def test_assignments_are_written_and_never_overwritten_silently(tmp_path, capsys):
    target = tmp_path / "assignments"
    written = write_assignments(NOTEBOOKS[0].parent, target)
    assert [p.name for p in written] == [p.name for p in NOTEBOOKS]
    student = nbformat.read(written[0], as_version=4)
    assert "raise NotImplementedError()" in "".join(c.source for c in student.cells)

    written[0].write_text("an instructor's edits")
    assert main([str(NOTEBOOKS[0].parent), str(target)]) == 1
    err = capsys.readouterr().err
    assert "already exist" in err and "--force" in err
    assert written[0].read_text() == "an instructor's edits"

    assert main([str(NOTEBOOKS[0].parent), str(target), "--force"]) == 0
    assert nbformat.read(written[0], as_version=4).cells


def test_assignments_refuse_to_write_into_the_source(tmp_path):
    with pytest.raises(ValueError, match="source folder"):
        write_assignments(NOTEBOOKS[0].parent, NOTEBOOKS[0].parent)
