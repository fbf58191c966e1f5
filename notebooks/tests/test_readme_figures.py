"""Tests of notebooks/readme_figures.py: the README's figures are drawn from
the committed reference folder, stay small, and a missing input is an error
that names it rather than a figure with a curve quietly left out.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s notebooks/tests -v
"""
import os
import shutil
import struct
import sys
import tempfile
import unittest
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import readme_figures  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
# The folders the figures can be drawn from: those with a full run (full/locks.json), as ./lab figures
# picks them; a later folder may hold only the suites measured since.
REFERENCES = sorted(p.parents[1] for p in (REPO / "results" / "reference").glob("*/full/locks.json"))
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple:
    """(width, height) from a PNG's IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == PNG_MAGIC, f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


@unittest.skipUnless(REFERENCES, "no results/reference folder")
class ReadmeFiguresTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def test_every_figure_is_drawn_small_from_the_reference_folder(self):
        paths = readme_figures.write_figures(REFERENCES[-1], self.out)
        self.assertEqual([p.name for p in paths], list(readme_figures.FIGURES))
        for path in paths:
            width, height = png_size(path)
            self.assertLessEqual(width, 1300, path.name)
            self.assertLessEqual(height, 700, path.name)
            self.assertLess(path.stat().st_size, 250_000, path.name)

    def test_the_readme_shows_every_committed_figure(self):
        readme = (REPO / "README.md").read_text(encoding="utf-8")
        for name in readme_figures.FIGURES:
            self.assertTrue((REFERENCES[-1] / "plots" / name).is_file(), f"{name} is not committed")
            self.assertTrue(f"{REFERENCES[-1].name}/plots/{name}" in readme, f"the README does not show {name}")

    def test_a_missing_input_is_an_error_that_names_it(self):
        copy = self.out / "reference"
        shutil.copytree(REFERENCES[-1], copy, ignore=shutil.ignore_patterns("plots", "compare"))
        (copy / "pinning.json").unlink()
        with self.assertRaisesRegex(readme_figures.MissingData, "pinning.json"):
            readme_figures.write_figures(copy, self.out / "plots")

    def test_a_missing_lock_is_an_error_not_a_shorter_legend(self):
        copy = self.out / "reference"
        shutil.copytree(REFERENCES[-1], copy, ignore=shutil.ignore_patterns("plots", "compare"))
        jvm = copy / "full" / "jvm_locks.json"
        jvm.write_text(jvm.read_text(encoding="utf-8").replace("java.synchronized", "java.elsewhere"),
                       encoding="utf-8")
        with self.assertRaisesRegex(readme_figures.MissingData, "java.synchronized"):
            readme_figures.locks_figure(copy, self.out)

    def test_the_parking_lot_figure_needs_the_algorithm_it_replaced(self):
        copy = self.out / "reference"
        shutil.copytree(REFERENCES[-1], copy, ignore=shutil.ignore_patterns("plots", "compare"))
        locks = copy / readme_figures.PARKING_FULL / "locks.json"
        locks.write_text(locks.read_text(encoding="utf-8").replace("FutexMutex(3-state)", "FutexMutex(other)"),
                         encoding="utf-8")
        with self.assertRaisesRegex(readme_figures.MissingData, r"FutexMutex\(3-state\)"):
            readme_figures.parking_lot_figure(copy, self.out)


if __name__ == "__main__":
    unittest.main()
