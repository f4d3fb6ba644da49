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


def test_forbid_blocks_ready_made_functions_and_restores_them():
    import torch

    import attn
    from attn.grading import forbid

    x = torch.tensor([1.0, 2.0])
    before = torch.softmax(x, 0)
    with forbid("torch.softmax", "torch.Tensor.softmax", "attn.softmax"):
        with pytest.raises(AssertionError, match="torch.softmax is not allowed"):
            torch.softmax(x, 0)
        with pytest.raises(AssertionError, match="torch.Tensor.softmax is not allowed"):
            x.softmax(0)
        with pytest.raises(AssertionError, match="attn.softmax is not allowed"):
            attn.softmax(x)
    assert torch.equal(torch.softmax(x, 0), before) and torch.equal(x.softmax(0), before)
    assert "softmax" not in vars(torch.Tensor) and attn.softmax is attn.functional.softmax
    with pytest.raises(ValueError, match="cannot import"), forbid("no_such_module.f"):
        pass
