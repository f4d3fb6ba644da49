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


def test_forbid_blocks_a_name_the_solution_bound_before_the_check():
    """A notebook that imported the function (``from attn.vision import patchify``) or bound it to a name of its
    own (``sm = torch.softmax``) before the autograder cell cannot call it through that name inside the block."""
    namespace = {"__name__": "__main__"}
    exec(
        "import torch\n"
        "from attn.vision import patchify\n"
        "from attn.grading import forbid\n"
        "sm = torch.softmax\n"
        "def shortcut(x):\n"
        "    return patchify(x, 2)\n"
        "def other(x):\n"
        "    return sm(x, 0)\n"
        "x = torch.zeros(1, 3, 4, 4)\n"
        "outcomes = []\n"
        "cases = ((lambda: shortcut(x), 'attn.vision.patchify'), (lambda: other(x[0, 0, 0]), 'torch.softmax'))\n"
        "for call, forbidden in cases:\n"
        "    with forbid(forbidden):\n"
        "        try:\n"
        "            call()\n"
        "            outcomes.append('passed')\n"
        "        except AssertionError as error:\n"
        "            outcomes.append(str(error))\n"
        "after = (shortcut(x).shape, other(x[0, 0, 0]).shape)\n",
        namespace,
    )  # fmt: skip
    assert [o.split(" is not")[0] for o in namespace["outcomes"]] == ["attn.vision.patchify", "torch.softmax"]
    from attn.vision import patchify

    assert namespace["patchify"] is patchify and namespace["after"][0] == (1, 4, 12)  # restored after the block
