"""Tests of notebooks/report.py: the page is self-contained, valid, and
carries every suite's table and plot; the checker catches what it claims to.

Run from the repository root:
    /usr/bin/python3 -m unittest discover -s notebooks/tests -v
"""
import base64
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import report  # noqa: E402
from test_locklab_plots import single_run, two_knob_values  # noqa: E402


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        (self.dir / "counters.json").write_text(json.dumps(single_run()))
        (self.dir / "locks.json").write_text(json.dumps(two_knob_values()))

    def tearDown(self):
        self.tmp.cleanup()

    def test_page_is_valid_self_contained_and_complete(self):
        page = report.build_report(self.dir)
        self.assertEqual(report.check_html(page), [])
        # every suite has its section, its table and at least one embedded plot
        for suite, impl in (("counters", "FetchAddCounter"), ("locks", "MutexLock")):
            self.assertIn(f'<section id="{suite}">', page)
            self.assertIn(impl, page)
        self.assertGreaterEqual(page.count('src="data:image/png;base64,'), 3)
        self.assertNotIn("http://", page)
        self.assertNotIn("https://", page)

    def test_names_from_results_are_escaped(self):
        data = single_run()
        for b in data["benchmarks"]:
            b["name"] = b["run_name"] = b["name"].replace("FetchAddCounter", "Fetch<b>Add")
        (self.dir / "counters.json").write_text(json.dumps(data))
        page = report.build_report(self.dir)
        self.assertIn("Fetch&lt;b&gt;Add", page)
        self.assertEqual(report.check_html(page), [])

    def test_checker_catches_broken_pages(self):
        png = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\nxx").decode()
        good = f'<!DOCTYPE html><html><head><title>t</title></head><body><img src="{png}"></body></html>'
        self.assertEqual(report.check_html(good), [])
        cases = {
            "unclosed": good.replace("</body>", ""),
            "external image": good.replace(png, "plots/locks.png"),
            "not a png": good.replace(png, "data:image/png;base64," + base64.b64encode(b"GIF89a").decode()),
            "link out": good.replace("<body>", '<body><a href="https://example.org">x</a>'),
            "no doctype": good.replace("<!DOCTYPE html>", ""),
        }
        for what, page in cases.items():
            with self.subTest(what):
                self.assertNotEqual(report.check_html(page), [])

    def test_command_line_writes_the_page_and_rejects_an_empty_dir(self):
        out = self.dir / "r.html"
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(report.main([str(self.dir), str(out)]), 0)
        self.assertEqual(report.check_html(out.read_text()), [])
        empty = self.dir / "empty"
        empty.mkdir()
        with contextlib.redirect_stderr(io.StringIO()) as err:
            self.assertEqual(report.main([str(empty)]), 2)
        self.assertIn("no *.json", err.getvalue())


if __name__ == "__main__":
    unittest.main()
