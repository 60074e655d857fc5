"""Command line: `report`, `compare`, `screenshot`. Usage errors are one line and exit 2."""

from __future__ import annotations

import argparse
import sys

from .util import UsageError, write_atomic

PROG = "ipclab"


class Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print the whole usage block; we print one line
        raise UsageError(f"{message}; see `{self.prog} --help`")


def _threshold(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--threshold {text!r} is not a number; give a percentage like 5") from None
    if not 0 <= v < 1000:
        raise argparse.ArgumentTypeError(f"--threshold {v:g} is out of range; give a percentage from 0 to 1000")
    return v


def _alpha(text):
    try:
        v = float(text)
    except ValueError:
        v = -1
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"--alpha {text!r} must be a number between 0 and 1, e.g. 0.05")
    return v


def parser():
    p = Parser(prog=PROG, description="ipclab reports and comparisons over result JSON (schema 1).")
    sub = p.add_subparsers(dest="command", metavar="{report,compare,screenshot}", parser_class=Parser)
    r = sub.add_parser("report", help="self-contained HTML report with plots (and Markdown)",
                       description="Self-contained HTML report with plots; several files are shown side by side.")
    r.add_argument("results", nargs="+", metavar="RESULT.json")
    r.add_argument("-o", "--output", required=True, metavar="report.html", help="HTML file to write")
    r.add_argument("--markdown", metavar="F", help="also write a Markdown summary to F")
    c = sub.add_parser("compare", help="per-benchmark ratios with a Mann-Whitney U test",
                       description="Compare time per op of NEW against BASE; exit 1 on a significant "
                                   "slowdown beyond the threshold.")
    c.add_argument("base", metavar="BASE.json")
    c.add_argument("new", metavar="NEW.json")
    c.add_argument("--threshold", type=_threshold, default=5.0, metavar="PCT",
                   help="change in percent below which benchmarks count as the same (default 5)")
    c.add_argument("--alpha", type=_alpha, default=0.05, help="significance level (default 0.05)")
    s = sub.add_parser("screenshot", help="render an HTML report to PNG with headless Chromium")
    s.add_argument("html", metavar="report.html")
    s.add_argument("png", metavar="out.png")
    s.add_argument("--width", type=int, default=1280)
    s.add_argument("--height", type=int, default=2000)
    return p


def cmd_report(args):
    from .load import load_all

    files = load_all(args.results)  # before importing matplotlib: bad input fails fast
    from . import html, markdown

    write_atomic(args.output, html.render(files))
    print(f"wrote {args.output}", file=sys.stderr)
    if args.markdown:
        write_atomic(args.markdown, markdown.render(files) + "\n")
        print(f"wrote {args.markdown}", file=sys.stderr)
    return 0


def cmd_compare(args):
    from .compare import compare_files, format_table

    result = compare_files(args.base, args.new, args.threshold, args.alpha)
    print(format_table(result, args.threshold, args.alpha))
    return 1 if result.regressions else 0


def cmd_screenshot(args):
    from .screenshot import screenshot

    print(screenshot(args.html, args.png, args.width, args.height))
    return 0


def main(argv=None) -> int:
    args = None
    try:
        args = parser().parse_args(argv)
        if args.command is None:
            raise UsageError("name a command: report, compare or screenshot; see `ipclab --help`")
        return {"report": cmd_report, "compare": cmd_compare, "screenshot": cmd_screenshot}[args.command](args)
    except UsageError as e:
        cmd = f" {args.command}" if args is not None and getattr(args, "command", None) else ""
        print(f"{PROG}{cmd}: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
