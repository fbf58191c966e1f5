"""Every lab says "no data" only through lp.no_data.

lp.no_data prints its message for a reader and raises under
$LOCKLAB_REQUIRE_DATA=1 (./lab test's smoke run), so a branch that the smoke
data stops reaching fails there; a plain print() of a no-data message would
pass silently. This test reads the notebooks' code cells and fails on such a
print. Run from the repository root:
    /usr/bin/python3 -m unittest discover -s notebooks/tests -v
"""
import json
import re
import unittest
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1]
CHECKED = tuple(sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
# print("no data ..."), print(f"No data: ..."), print("no locks data, see above"), print("no cpu_per_wall in this file")
NO_DATA_PRINT = re.compile(r"""print\(\s*f?["'][^"']*\bno\b[^"']*\b(data|in this file)\b""", re.IGNORECASE)


def no_data_prints(notebook: Path) -> list:
    """'cell N: line' for every print() of a no-data message in the notebook's code cells."""
    found = []
    for number, cell in enumerate(json.loads(notebook.read_text(encoding="utf-8"))["cells"]):
        if cell["cell_type"] != "code":
            continue
        for line in "".join(cell["source"]).splitlines():
            if NO_DATA_PRINT.search(line):
                found.append(f"cell {number}: {line.strip()}")
    return found


class NoDataBranchesTest(unittest.TestCase):
    def test_the_pattern_catches_the_old_branches(self):
        self.assertTrue(NO_DATA_PRINT.search('    print("no locks data, see above")'))
        self.assertTrue(NO_DATA_PRINT.search('    print(f"No data: there is no {where}.\\n"'))
        self.assertTrue(NO_DATA_PRINT.search('    print("no cpu_per_wall in this file")'))
        self.assertFalse(NO_DATA_PRINT.search('    lp.no_data("no locks data: run ./lab bench locks")'))
        self.assertFalse(NO_DATA_PRINT.search('    print(f"Data:    {DATA}")'))

    def test_every_lab_uses_lp_no_data(self):
        self.assertGreaterEqual(len(CHECKED), 9)
        for name in CHECKED:
            with self.subTest(notebook=name):
                self.assertEqual(no_data_prints(NOTEBOOKS / name), [],
                                 "a no-data branch prints instead of calling lp.no_data")


if __name__ == "__main__":
    unittest.main()
