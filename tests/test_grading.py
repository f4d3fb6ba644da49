import textwrap

import nbformat
import pytest
import torch
from notebook_utils import NOTEBOOKS

from attn.book.grading import main, write_assignments


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


def written_from_the_idea(x):
    e = torch.exp(x - x.max())
    return e / e.sum()


def test_forbid_blocks_ready_made_functions_and_restores_them():
    import torch

    import attn
    from attn.book.grading import forbid

    x = torch.tensor([1.0, 2.0])
    before = torch.softmax(x, 0)
    with forbid("torch.softmax", "torch.Tensor.softmax", "attn.softmax", solution=written_from_the_idea):
        with pytest.raises(AssertionError, match="torch.softmax is not allowed"):
            torch.softmax(x, 0)
        with pytest.raises(AssertionError, match="torch.Tensor.softmax is not allowed"):
            x.softmax(0)
        with pytest.raises(AssertionError, match="attn.softmax is not allowed"):
            attn.softmax(x)
    assert torch.equal(torch.softmax(x, 0), before) and torch.equal(x.softmax(0), before)
    assert "softmax" not in vars(torch.Tensor) and attn.softmax is attn.functional.softmax
    with pytest.raises(ValueError, match="cannot import"), forbid("no_such_module.f", solution=written_from_the_idea):
        pass


def test_forbid_blocks_a_name_the_solution_bound_before_the_check():
    """A notebook that imported the function (``from attn.vision import patchify``) or bound it to a name of its
    own (``sm = torch.softmax``) before the autograder cell cannot call it through that name inside the block
    (here at run time: the solution named is a harmless one, so only the block is tested)."""
    namespace = {"__name__": "__main__", "harmless": written_from_the_idea}
    exec(
        "import torch\n"
        "from attn.vision import patchify\n"
        "from attn.book.grading import forbid\n"
        "sm = torch.softmax\n"
        "def shortcut(x):\n"
        "    return patchify(x, 2)\n"
        "def other(x):\n"
        "    return sm(x, 0)\n"
        "x = torch.zeros(1, 3, 4, 4)\n"
        "outcomes = []\n"
        "cases = ((lambda: shortcut(x), 'attn.vision.patchify'), (lambda: other(x[0, 0, 0]), 'torch.softmax'))\n"
        "for call, forbidden in cases:\n"
        "    with forbid(forbidden, solution=harmless):\n"
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


def notebook(tmp_path, *cells):
    """Run cells as a notebook kernel would (one namespace, each cell's code readable by inspect)."""
    namespace = {"__name__": "__main__"}
    for i, cell in enumerate(cells):
        path = tmp_path / f"cell{i}.py"
        path.write_text(textwrap.dedent(cell))
        exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


SOFTMAX = ("torch.softmax", "torch.nn.functional.softmax", "torch.Tensor.softmax", "attn.softmax")

# Every way found to call the forbidden function from a solution (the cell before it, then the solution).
SHORTCUTS = {
    "from attn import ... as": ("from attn import softmax as sm", "def answer(x):\n    return sm(x)"),
    "an alias bound in a cell": (
        "import torch\n_softmax = torch.softmax",
        "def answer(x):\n    return _softmax(x, -1)",
    ),
    "the module attribute": ("import torch.nn.functional as F", "def answer(x):\n    return F.softmax(x, -1)"),
    "a method": ("", "def answer(x):\n    return x.softmax(-1)"),
    "a default argument": ("import torch", "def answer(x, f=torch.softmax):\n    return f(x, -1)"),
    "a closure": (
        "import torch",
        "def make():\n    f = torch.softmax\n    def answer(x):\n        return f(x, -1)\n"
        "    return answer\nanswer = make()",
    ),
    "a helper": ("import attn\ndef helper(x):\n    return attn.softmax(x)", "def answer(x):\n    return helper(x) * 1"),
    "a lambda": ("import attn\nhelper = lambda x: attn.softmax(x)", "def answer(x):\n    return helper(x)"),
    "a class": (
        "import torch\nclass Helper:\n    def go(self, x):\n        return torch.softmax(x, -1)",
        "def answer(x):\n    return Helper().go(x)",
    ),
    "an import inside": ("", "def answer(x):\n    from torch import softmax\n    return softmax(x, -1)"),
    "getattr": ("import torch", "def answer(x):\n    return getattr(torch, 'soft' + 'max')(x, -1)"),
    "__dict__": ("import torch", "def answer(x):\n    return torch.__dict__['softmax'](x, -1)"),
    "the function itself": ("import attn", "answer = attn.softmax"),
    "a partial": (
        "import functools, torch\nf = functools.partial(torch.softmax, dim=-1)",
        "def answer(x):\n    return f(x)",
    ),
}


@pytest.mark.parametrize("way", SHORTCUTS)
def test_check_written_finds_the_forbidden_function_however_it_is_reached(tmp_path, way):
    from attn.book.grading import check_written

    before, solution = SHORTCUTS[way]
    namespace = notebook(tmp_path, before, solution)
    with pytest.raises(AssertionError, match="write it yourself"):
        check_written(namespace["answer"], *SOFTMAX)


def test_check_written_accepts_solutions_written_from_the_idea(tmp_path):
    """Correct answers written in other ways than the book's, using torch's other functions, pass."""
    from attn.book.grading import check_written, forbid

    namespace = notebook(
        tmp_path,
        "import torch\nimport attn\nfrom attn.book.grading import forbid\nsoftmax_like = 3",
        """
        def stable_softmax(x, temperature=1.0):
            z = x / temperature
            z = z - z.max(dim=-1, keepdim=True).values  # a local may shadow nothing forbidden
            e = torch.exp(z)
            return e / e.sum(-1, keepdim=True)
        """,
        "import torch\nx = torch.tensor([[200.0, -200.0, 199.0]])\n"
        "with forbid(*" + repr(SOFTMAX) + ", solution=stable_softmax):\n    y = stable_softmax(x, 0.3)",
    )
    check_written(namespace["stable_softmax"], *SOFTMAX)
    expected = torch.softmax(namespace["x"].double() / 0.3, -1)
    assert torch.allclose(namespace["y"].double(), expected, rtol=1e-4)
    with pytest.raises(TypeError, match="solution"), forbid(*SOFTMAX):  # the solution must be named
        pass


def test_forbid_blocks_library_functions_that_call_the_forbidden_one(tmp_path):
    """A solution may call a library function that was not named, but not to reach a forbidden one: attn.attend
    calls attn.functional's softmax, which the block replaces."""
    namespace = notebook(
        tmp_path,
        "import torch\nimport attn\nfrom attn.book.grading import forbid",
        "def answer(e, H):\n    return attn.attend(e[None], H)[0][0]",
        "outcome = None\ntry:\n    with forbid('attn.softmax', solution=answer):\n"
        "        answer(torch.zeros(3), torch.eye(3))\nexcept AssertionError as error:\n    outcome = str(error)",
    )
    assert namespace["outcome"] == "attn.softmax is not allowed in this exercise: write it yourself"
    import attn

    assert attn.functional.softmax is attn.softmax and attn.softmax.__module__ == "attn.functional"


# ---- issue 34: containers, operators, tampering ----------------------------------------------------------------

KEPT = {
    "a list": ("import torch\nkept = [torch.softmax]", "def answer(x):\n    return kept[0](x, -1)"),
    "a dict": ("import torch\nkept = {'f': torch.softmax}", "def answer(x):\n    return kept['f'](x, -1)"),
    "a class attribute": (
        "import torch\nclass Kept:\n    f = staticmethod(torch.softmax)",
        "def answer(x):\n    return Kept.f(x, -1)",
    ),
    "an object's attribute": (
        "import torch\nclass Box:\n    def __init__(self, f):\n        self.f = f\nbox = Box(torch.softmax)",
        "def answer(x):\n    return box.f(x, -1)",
    ),
    "a nested container": (
        "import attn\nkept = ({'a': [None, (attn.softmax,)]},)",
        "def answer(x):\n    return kept[0]['a'][1][0](x)",
    ),
    # round 3: held where a reader of containers does not look
    "a weak reference": (
        "import torch, weakref\nclass Box:\n    f = staticmethod(torch.nn.functional.softmax)\nref = weakref.ref(Box)",
        "def answer(x):\n    return ref().f(x, -1)",
    ),
    "a weak-value dict": (
        "import attn, weakref\nkept = weakref.WeakValueDictionary({'f': attn.softmax})",
        "def answer(x):\n    return kept['f'](x)",
    ),
    "a container nested 30 deep": (
        "import attn\nkept = [attn.softmax]\nfor _ in range(30):\n    kept = [kept]",
        "def answer(x):\n    box = kept\n    while isinstance(box, list):\n        box = box[0]\n    return box(x)",
    ),
    "a deque in an object's slots": (
        "import attn, collections\nclass Slots:\n    __slots__ = ('q',)\ns = Slots()\n"
        "s.q = collections.deque([attn.softmax])",
        "def answer(x):\n    return s.q[0](x)",
    ),
}


@pytest.mark.parametrize("way", KEPT)
def test_check_written_finds_a_forbidden_function_kept_in_a_container(tmp_path, way):
    from attn.book.grading import check_written

    namespace = notebook(tmp_path, *KEPT[way])
    with pytest.raises(
        AssertionError, match="holds torch.softmax|holds attn.softmax|holds torch.nn.functional.softmax"
    ):
        check_written(namespace["answer"], *SOFTMAX)


def test_a_weak_proxy_is_refused_since_the_grader_cannot_read_it(tmp_path):
    from attn.book.grading import check_written

    namespace = notebook(
        tmp_path,
        "import torch, weakref\nclass Box:\n    def __init__(self):\n        self.f = torch.softmax\n"
        "box = Box()\nproxy = weakref.proxy(box)",
        "def answer(x):\n    return proxy.f(x, -1)",
    )
    with pytest.raises(AssertionError, match="proxy is a weak proxy, which the grader cannot read"):
        check_written(namespace["answer"], *SOFTMAX)


HONEST_DECORATED = {
    "torch.no_grad()": "import torch\n@torch.no_grad()\ndef answer(x):\n    e = (x - x.max()).exp()\n"
    "    return e / e.sum()",
    "functools.cache": "import functools\n@functools.cache\ndef answer(n):\n    return 1 / n",
    "a decorator of the notebook's": (
        "import functools\ndef logged(f):\n    @functools.wraps(f)\n    def inner(*a):\n        return f(*a)\n"
        "    return inner\n@logged\ndef answer(x):\n    e = (x - x.max()).exp()\n    return e / e.sum()"
    ),
}


@pytest.mark.parametrize("way", HONEST_DECORATED)
def test_an_honest_solution_under_a_decorator_passes(tmp_path, way):
    """The grader reads the function the student wrote, not the decorator's wrapper in torch's or functools' file
    (which used to score a correct answer 0 with a list of torch's lines)."""
    from attn.book.grading import check_written

    namespace = notebook(tmp_path, HONEST_DECORATED[way])
    check_written(namespace["answer"], *SOFTMAX)


@pytest.mark.parametrize(
    "cell",
    [
        "import torch\n@torch.no_grad()\ndef answer(x):\n    return torch.softmax(x, -1)",
        # a __wrapped__ set by hand to an honest function: the wrapper's closure still holds the one that runs
        "import torch\ndef honest(x):\n    return x\n@torch.no_grad()\ndef answer(x):\n"
        "    return torch.softmax(x, -1)\nanswer.__wrapped__ = honest",
        "import torch, functools\nanswer = torch.no_grad()(functools.partial(torch.softmax, dim=-1))",
    ],
)
def test_a_decorated_shortcut_is_still_found(tmp_path, cell):
    from attn.book.grading import check_written

    namespace = notebook(tmp_path, cell)
    with pytest.raises(AssertionError, match="write it yourself"):
        check_written(namespace["answer"], *SOFTMAX)


@pytest.mark.parametrize(
    "call",
    [
        "torch.nn.functional.softmin(-x, -1)",  # a sibling function not on the list
        "x.clone().softmax(-1)",  # refused by name: a method
        "torch.special.log_softmax(x, -1).exp()",  # another module's variant
        "torch.sparse.softmax(x.to_sparse(), -1).to_dense()",  # the sparse operator
    ],
)
def test_forbid_refuses_torchs_operator_however_it_is_reached(tmp_path, call):
    namespace = notebook(
        tmp_path,
        "import torch\nimport torch.nn.functional\nfrom attn.book.grading import forbid",
        f"def answer(x):\n    return {call}",
        "outcome = None\ntry:\n    with forbid('torch.softmax', solution=answer):\n        answer(torch.ones(2, 3))\n"
        "except AssertionError as error:\n    outcome = str(error)",
    )
    assert "torch.softmax" in namespace["outcome"] and "write it yourself" in namespace["outcome"]


def test_forbid_allows_the_operators_of_functions_not_forbidden(tmp_path):
    """Forbidding scaled_dot_product_attention leaves torch.softmax to the solution (chapter 5 asks for it)."""
    namespace = notebook(
        tmp_path,
        "import torch\nfrom attn.book.grading import forbid",
        "def answer(X):\n    A = torch.softmax(X @ X.T, -1)\n    return A @ X",
        "with forbid('torch.nn.functional.scaled_dot_product_attention', solution=answer):\n"
        "    y = answer(torch.eye(3))",
    )
    assert namespace["y"].shape == (3, 3)


def test_forbid_refuses_a_patched_library_before_and_after_the_block(tmp_path):
    import torch

    original = torch.allclose
    try:
        namespace = notebook(
            tmp_path,
            "import torch\nfrom attn.book.grading import forbid\nfrom attn.book.tampering import snapshot\nsnapshot()",
            "def answer(x):\n    return x",
            "torch.allclose = lambda *a, **k: True",
            "outcome = None\ntry:\n    with forbid(solution=answer):\n        pass\n"
            "except AssertionError as error:\n    outcome = str(error)",
        )
        assert "changed torch.allclose" in namespace["outcome"]
    finally:
        torch.allclose = original
    from attn.book.tampering import changes

    assert changes() == []


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("import sys\ndef f(x):\n    return x", "imports sys"),
        ("def f(x):\n    global y\n    y = x", "global y"),
        ("import torch\ntorch.softmax = None", "changes torch"),
        ("def f(x, m):\n    t = [m][0]\n    return x", None),  # a parameter's element: the solution's own business
        ("import torch\ndef f(x):\n    t = [torch][0]\n    t.softmax = None", "changes t"),
        ("def f(x):\n    return x.__class__", "reaches .__class__"),
        ("def f(x):\n    return torch._C", "reaches ._C"),
        ("def f(x):\n    return torch.ops.aten.softmax(x, -1)", "reaches .ops"),
        ("def f(x):\n    return getattr(x, 'softmax')(-1)", "uses getattr"),
        ("from attn.book.grading import forbid", "imports attn.book.grading"),
        ("forbid = None", "binds forbid"),
        ("def model(x):\n    return x", "defines model"),
        ("import torch", None),  # the same import as the chapter's
        ("import torch.nn.functional as torch", "binds torch"),
        ("def f(model):\n    model.attention = None\n    w = torch.zeros(3)\n    w[0] = 1\n    return w", None),
        ("%matplotlib inline\ndef f(x):\n    return x", None),
        ("(model := 3)", "binds model"),  # every way of binding a name counts
        ("try:\n    pass\nexcept ValueError as model:\n    pass", "binds model"),
        ("match 1:\n    case model:\n        pass", "binds model"),
        ("range = lambda *a: ()", "binds range"),  # a built-in the checks read
        ("x = torch.randn(3)\nx[0] = 1\nfor i in range(3):\n    print(i)", None),  # scratch code
        ("class Counter:\n    def __init__(self):\n        self._n = 0", None),
        ("from __future__ import annotations", None),
        ("from torch.nn import functional as F", None),  # the chapter's F, imported another way
        ("import torch\nmodel.attention = None", "changes model"),
    ],
)
def test_refusals_find_what_could_change_the_grading(source, found):
    from attn.book.tampering import import_bindings, refusals

    chapter = "import torch\nimport torch.nn.functional as F\nforbid = 1\nmodel = 2"
    reserved = {"torch", "F", "forbid", "model", "range"}
    problems = refusals(source, reserved, {"torch", "F"}, import_bindings(chapter))
    if found is None:
        assert problems == []
    else:
        assert any(found in p for p in problems), problems


def test_the_preprocessor_refuses_a_tampering_cell_and_keeps_the_others():
    import nbformat

    from attn.book.preprocessors import RefuseTampering

    locked = {"nbgrader": {"locked": True, "grade": False, "solution": False, "grade_id": "c", "schema_version": 3}}
    solution = {"nbgrader": {"locked": False, "grade": False, "solution": True, "grade_id": "s", "schema_version": 3}}
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import torch\nfrom attn.book.grading import forbid", metadata=locked),
        nbformat.v4.new_code_cell("import torch\ndef f(x):\n    return x + 1", metadata=solution),
        nbformat.v4.new_code_cell("torch.allclose = lambda *a, **k: True"),  # a cell the student added
    ]
    nb, _ = RefuseTampering().preprocess(nb, {})
    assert nb.cells[1].source.startswith("import torch\ndef f")
    assert nb.cells[2].source.startswith("raise AssertionError(") and "changes torch" in nb.cells[2].source
    assert nb.cells[0].source.startswith("import torch")


def test_hidden_tests_draw_other_inputs_every_time():
    from attn.book.grading import fresh_generator

    seeds = {fresh_generator().initial_seed() for _ in range(20)}
    assert len(seeds) == 20


def test_check_written_finds_a_forbidden_function_in_a_container_without_attributes(tmp_path):
    from attn.book.grading import check_written

    namespace = notebook(
        tmp_path,
        "import collections\nimport attn\nkept = collections.deque([attn.softmax])",
        "def answer(x):\n    return kept[0](x)",
    )
    with pytest.raises(AssertionError, match="holds attn.softmax"):
        check_written(namespace["answer"], *SOFTMAX)


def test_the_preprocessor_reserves_only_what_the_checks_read():
    """A student may bind a name the chapter uses (scratch code) unless an autograder cell reads it."""
    import nbformat

    from attn.book.preprocessors import RefuseTampering

    def meta(**kind):
        return {"nbgrader": {"locked": True, "grade": False, "solution": False, "grade_id": "c", "schema_version": 3,
                             **kind}}  # fmt: skip

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import torch\nx = torch.zeros(3)\nmodel = torch.nn.Linear(3, 3)", metadata=meta()),
        nbformat.v4.new_code_cell("def f(x):\n    return x", metadata=meta(locked=False, solution=True)),
        nbformat.v4.new_code_cell("assert f(model(x)).shape == (3,)", metadata=meta(grade=True, points=1)),
        nbformat.v4.new_code_cell("x = torch.ones(3)"),  # reads into the check: refused
        nbformat.v4.new_code_cell("y = torch.ones(3)\ny[0] = 2"),  # scratch: kept
    ]
    nb, _ = RefuseTampering().preprocess(nb, {})
    assert nb.cells[3].source.startswith("raise AssertionError(") and "binds x" in nb.cells[3].source
    assert nb.cells[4].source.startswith("y = torch.ones(3)")


def test_every_chapter_takes_the_graders_first_look_in_its_locked_first_cell():
    """The snapshot that changes() compares with is taken by an explicit call, before any exercise, in a cell the
    student cannot edit (importing attn.book has no side effect)."""
    import ast

    from attn.book.tampering import ipython_lines

    for path in NOTEBOOKS:
        code = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        first = code[0]
        assert first.metadata["nbgrader"]["locked"], path.name
        calls = [
            n.value.func.id
            for n in ast.parse(ipython_lines(first.source)).body
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Name)
        ]
        assert "snapshot" in calls, f"{path.name}: the first cell must call snapshot()"


def test_importing_the_book_machinery_takes_no_snapshot():
    import subprocess
    import sys

    code = "import attn.book, attn.book.grading\nfrom attn.book import tampering\nprint(len(tampering._SEEN))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "0"
