"""One self-contained HTML page with every plot and table of a results folder.

``./lab report`` runs this after ``./lab plot``: for people who never open
Jupyter, and for attaching a run to an issue or an email.  The page embeds
every PNG as a ``data:`` URI and its CSS inline, so it opens offline, from any
folder, with no file beside it.  It is built with the standard library's
``html`` module only (escaping every name taken from the results), and
:func:`check_html` is the validity check the tests and ``./lab test`` run on it.

Usage::

    /usr/bin/python3 notebooks/report.py RESULTS_DIR [OUT_HTML] [--plots PLOTS_DIR]

``OUT_HTML`` defaults to ``RESULTS_DIR/report.html``; ``PLOTS_DIR`` to
``RESULTS_DIR/plots`` (drawn afresh when it holds no PNG).
"""
from __future__ import annotations

import argparse
import base64
import html
import sys
import tempfile
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locklab_plots as lp  # noqa: E402  (after the path tweak)

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
pre { background: #f6f6f6; padding: .8em; overflow-x: auto; font-size: .85em; }
img { max-width: 100%; border: 1px solid #eee; margin: .5em 0; }
nav li { display: inline; margin-right: 1em; }
.meta { color: #666; font-size: .9em; }
"""

# Elements whose end tag HTML lets you omit, or that have none.
_VOID = frozenset({"meta", "img", "br", "hr", "link", "input"})


def _png_data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _suite_of_png(png: Path, suites) -> str | None:
    """The suite a plot belongs to: its file name starts with the suite name
    (``locks.png``, ``locks_cs_ns-1000.png``, ``pinning_lockers.png``)."""
    for suite in sorted(suites, key=len, reverse=True):
        if png.stem == suite or png.stem.startswith(suite + "_") or png.stem.startswith(suite + "-"):
            return suite
    return None


def build_report(results_dir, plots_dir=None) -> str:
    """The HTML page (a string) for ``results_dir``; raises
    ``lp.BenchmarkFormatError`` if it holds no readable results."""
    results_dir = Path(results_dir)
    frames = lp.load_results_dir(results_dir)  # validates every JSON first
    plots_dir = Path(plots_dir) if plots_dir else results_dir / "plots"
    pngs = sorted(plots_dir.glob("*.png")) if plots_dir.is_dir() else []
    if not pngs:
        plots_dir = Path(tempfile.mkdtemp(prefix="locklab-report-"))
        pngs = sorted(Path(p) for p in lp.plot_results_dir(results_dir, plots_dir))

    esc = html.escape
    by_suite = {suite: [] for suite in frames}
    other = []
    for png in pngs:
        suite = _suite_of_png(png, frames)
        (by_suite[suite] if suite else other).append(png)

    contexts = [context for _, context in frames.values()]
    machine = lp.machine_title(contexts[0]) if contexts else ""
    made = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>locklab report \u2014 {esc(machine)}</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        "<h1>locklab report</h1>",
        f'<p class="meta">{esc(machine)} \u00b7 results from {esc(str(results_dir))} \u00b7 written {made}</p>',
        "<nav><ul>" + "".join(f'<li><a href="#{esc(s)}">{esc(s)}</a></li>' for s in frames) + "</ul></nav>",
    ]
    for suite, (_, context) in frames.items():
        out.append(f'<section id="{esc(suite)}">')
        out.append(f"<h2>{esc(suite)}</h2>")
        out.append(f'<p class="meta">{esc(lp.machine_title(context))}</p>')
        for path in sorted(results_dir.glob("*.json")):
            try:
                df = lp.load_suite(path)
            except lp.BenchmarkFormatError:
                continue
            if str(df["suite"].iloc[0]) == suite:
                out.append(f"<h3>{esc(path.name)}</h3>")
                out.append(f"<pre>{esc(lp.summary_table(path))}</pre>")
        for png in by_suite[suite]:
            out.append(f'<figure><img src="{_png_data_uri(png)}" alt="{esc(png.stem)}">'
                       f"<figcaption>{esc(png.name)}</figcaption></figure>")
        out.append("</section>")
    if other:
        out.append('<section id="other-plots"><h2>other plots</h2>')
        for png in other:
            out.append(f'<figure><img src="{_png_data_uri(png)}" alt="{esc(png.stem)}">'
                       f"<figcaption>{esc(png.name)}</figcaption></figure>")
        out.append("</section>")
    out += ["</body>", "</html>", ""]
    return "\n".join(out)


class _Checker(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []
        self.problems = []
        self.images = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("src", "href"):
            value = attrs.get(name)
            if value is None:
                continue
            if tag == "img" and name == "src":
                self.images += 1
                if not value.startswith("data:image/png;base64,"):
                    self.problems.append(f"<img> not embedded: {value[:60]}")
                    continue
                try:
                    raw = base64.b64decode(value.split(",", 1)[1], validate=True)
                except ValueError:
                    self.problems.append("<img> with invalid base64")
                    continue
                if not raw.startswith(b"\x89PNG\r\n\x1a\n"):
                    self.problems.append("<img> data is not a PNG")
            elif not value.startswith("#"):
                self.problems.append(f"<{tag} {name}> points outside the page: {value[:60]}")
        if tag not in _VOID:
            self.stack.append((tag, self.getpos()))

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1][0] != tag:
            self.problems.append(f"</{tag}> at line {self.getpos()[0]} closes "
                                 f"{self.stack[-1][0] if self.stack else 'nothing'}")
            return
        self.stack.pop()


def check_html(text: str) -> list:
    """Problems that would stop the page rendering self-contained: unbalanced
    tags, an image that is not an embedded PNG, a link out of the page, a
    missing doctype or title.  Returns a list of messages (empty: valid)."""
    checker = _Checker()
    checker.feed(text)
    checker.close()
    problems = list(checker.problems)
    problems += [f"<{tag}> opened at line {pos[0]} is never closed" for tag, pos in checker.stack]
    if not text.lstrip().lower().startswith("<!doctype html>"):
        problems.append("no <!DOCTYPE html>")
    if "<title>" not in text:
        problems.append("no <title>")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="report.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", type=Path, metavar="RESULTS_DIR")
    parser.add_argument("out_html", type=Path, nargs="?", metavar="OUT_HTML")
    parser.add_argument("--plots", type=Path, metavar="PLOTS_DIR")
    args = parser.parse_args(argv)
    try:
        page = build_report(args.results_dir, args.plots)
    except lp.BenchmarkFormatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    problems = check_html(page)
    if problems:
        print("error: the report is not valid HTML:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    out = args.out_html or args.results_dir / "report.html"
    out.write_text(page, encoding="utf-8")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
