"""The top-level conftest.py keeps what must run together in one pytest-xdist worker (make test: -n auto)."""

import importlib.util

from notebook_utils import NOTEBOOKS, ROOT

spec = importlib.util.spec_from_file_location("book_scheduling", ROOT / "conftest.py")
scheduling = importlib.util.module_from_spec(spec)
spec.loader.exec_module(scheduling)


def test_a_chapters_cells_are_one_group_costing_its_committed_run():
    path = NOTEBOOKS[1].relative_to(ROOT).as_posix()
    names = {scheduling.group(f"{path}::Cell {i}") for i in range(5)}
    assert len(names) == 1
    name, seconds = names.pop()
    assert name == path and seconds > 1
    assert scheduling.group(f"{NOTEBOOKS[2].relative_to(ROOT).as_posix()}::Cell 0")[0] != name


def test_second_path_runs_are_groups_of_their_own_and_the_book_is_one():
    a = scheduling.group(f"{scheduling.STUDENT_RUN}02_alignment]")
    b = scheduling.group(f"{scheduling.STUDENT_RUN}03_memory_networks]")
    assert a[0] != b[0] and a[1] > 1 and b[1] > 1
    book = {scheduling.group(n)[0] for n in ("tests/test_book.py::test_x", "tests/browser/test_book_pages.py::test_y")}
    assert book == {"book"}
    assert scheduling.group("tests/test_masks.py::test_a") == ("tests/test_masks.py", 0.0)
    assert scheduling.group("tests/test_masks.py::test_b")[0] == scheduling.group("tests/test_masks.py::test_a")[0]
