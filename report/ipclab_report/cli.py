"""Command line: `report`, `compare`, `ab`, `agree`, `history`, `screenshot`. Usage errors are one line and exit 2."""

from __future__ import annotations

import argparse
import os
import sys

from .compare import DEFAULT_NOISE_PCT  # light: scipy is imported only when a test runs
from .history import DEFAULT_STORE  # light: numpy and ruptures are imported when a series is judged
from .util import HelpFormatter, UsageError, brief, check_distinct, check_target, write_atomic

PROG = "ipclab"

REPORT_EPILOG = """\
Examples:
  ipclab report results/*/results.json -o report.html
  ipclab report results.json --markdown summary.md
  ipclab report results.json --pages docs/pages --readme README.md
  ipclab report results.json --reduce small.json"""

COMPARE_EPILOG = """\
Examples:
  ipclab compare before/results.json after/results.json
  ipclab compare base.json new.json --threshold 10
  ipclab compare base.json new.json --noise 25    (a fixed floor instead of the runs' spread)
Verdicts (r = median NEW / median BASE of time per op, over each file's repetitions):
  same     r is inside the benchmark's band, or the U test is not significant
  slower   r beyond the band AND Mann-Whitney U p < alpha (exit status 1)
  faster   r below 1/band AND p < alpha
The band is the widest of: the threshold; the noise floor (the runs' own spread: the larger of the
two sides' farthest repetition from its median or CI half-width; --noise PCT fixes it); the largest move of the
other anchors/* of the same placement (same or cross CPU) between the two files (the machine's
own calibration); and 2.5 x the 75th percentile of the |ln r| deviations of the other mechanisms
of the same placement (how far this pair of runs scatters). Repetitions within one run share the
machine's state, so the U test alone tells two runs apart, not two builds; the band is the
between-run noise. Model and measurements: docs/methodology.md, "Comparing two runs".
Exit: 0 no regression, 1 a regression, 2 usage error."""

HISTORY_EPILOG = """\
Examples:
  ipclab history                   (the store's benchmarks and their runs)
  ipclab history messaging/pipe/size:64
  ipclab history messaging/pipe --json history.json --html history.html
  ipclab history messaging/pipe --store lab.sqlite --all-flags
  ipclab history messaging/pipe --store postgresql://lab@db.example/ipclab
A run's figure: the median of its repetitions (time/op and p99 in ns,
capacity in /s), with the bootstrap 95% interval of that median.
A change point: PELT on the logs of the runs' figures, kept when the step
is beyond the series' own run-to-run noise and 2%, and a permutation test
gives p < 0.05. How to read it: docs/store.md, "History and change points".
Exit: 0, or 2 on a usage error."""


class Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print the whole usage block; we print one line
        raise UsageError(f"{message}; see `{self.prog} --help`")


def _percent(option, example):
    def parse(text):
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option} {text!r} is not a number; give a percentage like {example}") from None
        if not 0 <= v < 1000:
            raise argparse.ArgumentTypeError(f"{option} {v:g} is out of range; give a percentage from 0 to 1000")
        return v
    return parse


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
    sub = p.add_subparsers(dest="command", metavar="{report,compare,history,screenshot}", parser_class=Parser)
    r = sub.add_parser("report", formatter_class=HelpFormatter, epilog=REPORT_EPILOG, help="self-contained HTML report with plots, Markdown summary or pages, reduced copy",
                       description="Self-contained HTML report with plots (several files are shown side by side), "
                                   "a Markdown summary, Markdown pages per suite, or a reduced copy of a result.")
    r.add_argument("results", nargs="*", metavar="RESULT.json")
    r.add_argument("-o", "--output", metavar="report.html", help="HTML file to write")
    r.add_argument("--markdown", metavar="F", help="write a Markdown summary to F")
    r.add_argument("--topology", metavar="TOPO.json", action="append", default=[],
                   help="with -o: also show the cache-line round trip between CPUs saved by "
                        "`ipclab topo --json > TOPO.json` (repeatable)")
    r.add_argument("--pages", metavar="DIR",
                   help="write one Markdown page per suite of one RESULT.json to DIR/<suite>.md, with the text "
                        "under each table from DIR/notes/<suite>.md")
    r.add_argument("--suites", metavar="S[,S...]",
                   help="with --pages: write the pages of these suites only (a result that carries other "
                        "suites' records as baselines, e.g. the libs grid's messaging records)")
    r.add_argument("--readme", metavar="F",
                   help="with --pages: replace what lies between F's <!-- reference:begin --> and "
                        "<!-- reference:end --> lines with the headline table")
    r.add_argument("--history", metavar="BENCH", action="append", default=[],
                   help="with -o: instead of result files, the trend of these benchmarks' runs in the results "
                        "store (a name or a prefix; repeatable), change points marked, as `ipclab history "
                        "BENCH --html F` draws it")
    r.add_argument("--store", default=DEFAULT_STORE, metavar="PATH|URL",
                   help=f"with --history: the results store (default {DEFAULT_STORE}, or postgresql://…)")
    r.add_argument("--reduce", metavar="OUT.json",
                   help="write RESULT.json reduced to its medians (no repetitions, no histogram buckets) "
                        "to OUT.json: small enough to commit, still read by report and compare")
    c = sub.add_parser("compare", help="per-benchmark ratios with a Mann-Whitney U test and a noise band",
                       formatter_class=HelpFormatter,
                       description="Compare time per op of NEW against BASE; exit 1 on a significant\n"
                                   "slowdown beyond the threshold and the noise band.",
                       epilog=COMPARE_EPILOG)
    c.add_argument("base", metavar="BASE.json")
    c.add_argument("new", metavar="NEW.json")
    c.add_argument("--threshold", type=_percent("--threshold", 5), default=5.0, metavar="PCT",
                   help="change in percent below which benchmarks count as the same (default 5)")
    c.add_argument("--noise", type=_percent("--noise", 25), default=DEFAULT_NOISE_PCT, metavar="PCT",
                   help="a fixed floor of the between-run noise band in percent, instead of the runs' own "
                        "spread (default: each benchmark's, from its repetitions; e.g. --noise 25 on a "
                        "guest whose runs move more between runs than within one)")
    c.add_argument("--alpha", type=_alpha, default=0.05, help="significance level (default 0.05)")
    h = sub.add_parser("history", formatter_class=HelpFormatter, epilog=HISTORY_EPILOG,
                       help="a benchmark's runs in the results store over time, and its change points",
                       description="Each benchmark's runs in the results store, a series per machine\n"
                                   "and build, and where each series changed.")
    h.add_argument("bench", nargs="*", metavar="BENCH",
                   help="a benchmark's name or a prefix of names (messaging/pipe: every name that starts "
                        "with it); none: list the store's benchmarks")
    h.add_argument("--store", default=DEFAULT_STORE, metavar="PATH|URL",
                   help=f"the SQLite store `ipclab run` writes (default {DEFAULT_STORE}), or a PostgreSQL "
                        "store's postgresql://… URL; read only")
    h.add_argument("--machine", metavar="ID",
                   help="the series of this machine id (default: this host's, else every machine's)")
    h.add_argument("--all-flags", action="store_true",
                   help="every build's series (default: the build of the newest run of each benchmark)")
    h.add_argument("--json", metavar="FILE", help="also write the series and change points as JSON to FILE")
    h.add_argument("--html", metavar="FILE", help="also write a page with a trend chart per series to FILE")
    s = sub.add_parser("screenshot", help="render an HTML report to PNG with headless Chromium")
    s.add_argument("html", metavar="report.html")
    s.add_argument("png", metavar="out.png")
    s.add_argument("--width", type=int, default=1280)
    s.add_argument("--height", type=int, default=2000)
    return p


def check_pages_dir(path):
    """--pages DIR: an existing folder ipclab may write in, or a new one (made when the pages are
    written) whose parent is."""
    if os.path.isdir(path) and not os.path.islink(path):
        if not os.access(path, os.W_OK | os.X_OK):
            raise UsageError(f"--pages {brief(path)}: the folder is not writable; choose a writable folder")
    elif os.path.lexists(path):
        raise UsageError(f"--pages {brief(path)} is not a folder; name a folder (made when missing)")
    else:
        check_target("--pages", path)


def cmd_report(args):
    from .load import load_all
    from .topology import load_saved

    if args.history:
        if args.results or args.markdown or args.pages or args.reduce or args.topology or not args.output:
            raise UsageError("--history draws the store's runs into -o report.html alone: give no result "
                             "files and no other output")
        check_target("-o", args.output)
        store, shown, whose = _history_series(args.store, args.history)
        from . import html

        write_atomic(args.output, html.render_history(store, shown, whose))
        print(f"wrote {args.output}", file=sys.stderr)
        return 0
    if not args.results:
        raise UsageError("name the result files to report on (RESULT.json ...), or --history BENCH")
    if not (args.output or args.markdown or args.pages or args.reduce):
        raise UsageError("name an output: -o report.html, --markdown F, --pages DIR or --reduce OUT.json")
    if args.suites and not args.pages:
        raise UsageError("--suites goes with --pages DIR (it names the pages to write)")
    if args.readme and not args.pages:
        raise UsageError("--readme goes with --pages DIR (the README links to the pages)")
    if args.topology and not args.output:
        raise UsageError("--topology goes with -o report.html (the HTML report shows it)")
    if args.pages and len(args.results) != 1:
        raise UsageError(f"--pages takes one result file, not {len(args.results)}; merge parts of one run "
                         "with --reduce first")
    # Every output checked before any input is read or anything is written.
    targets = [(opt, path) for opt, path in (("-o", args.output), ("--markdown", args.markdown),
                                             ("--reduce", args.reduce), ("--readme", args.readme)) if path]
    for opt, path in targets:
        check_target(opt, path)
    if args.pages:
        check_pages_dir(args.pages)
    check_distinct([(f"{opt} {brief(path)}", path) for opt, path in targets])
    files = load_all(args.results)  # before importing matplotlib: bad input fails fast
    saved = [(path, load_saved(path)) for path in args.topology]
    if args.reduce:
        from . import reduce

        reduce.write(files, args.reduce)
        print(f"wrote {args.reduce}", file=sys.stderr)
    if args.pages:
        from .pages import write_pages

        only = [x for x in args.suites.split(",") if x] if args.suites else None
        for path in write_pages(files[0], args.pages, args.readme, only):
            print(f"wrote {path}", file=sys.stderr)
    if args.output:
        from . import html

        write_atomic(args.output, html.render(files, saved))
        print(f"wrote {args.output}", file=sys.stderr)
    if args.markdown:
        from . import markdown

        write_atomic(args.markdown, markdown.render(files) + "\n")
        print(f"wrote {args.markdown}", file=sys.stderr)
    return 0


def cmd_compare(args):
    from .compare import compare_files, format_table

    result = compare_files(args.base, args.new, args.threshold, args.alpha, args.noise)
    if result.rows and all(c.verdict == "no data" for c in result.rows):
        raise UsageError(f"none of the {len(result.rows)} benchmark(s) in both files has a positive time to "
                         "compare (every record's time per op is zero or missing); compare results of runs "
                         "that measured")
    print(format_table(result, args.threshold, args.alpha, args.noise))
    if not result.rows and not result.failed:  # nothing in common: not a comparison, a mix-up
        raise UsageError(f"BASE and NEW share no benchmark ({len(result.only_base)} only in BASE, "
                         f"{len(result.only_new)} only in NEW, listed above); compare two runs of the same benchmarks")
    return 1 if result.regressions else 0


def _history_series(store, bench, machine=None, all_flags=False):
    """(the store's name without a password, the series shown with their change points, whose they
    are) of the benchmarks `bench` names: history's and `report --history`'s one way to them."""
    from . import history

    conn = history.open_store(store)
    try:
        series = history.load_series(conn, history.matching(history.benchmark_counts(conn), bench))
    finally:
        conn.close()
    shown, whose = history.select(series, machine, all_flags)
    for s in shown:
        history.detect(s)
    return history.store_name(store), shown, whose


def cmd_history(args):
    from . import history

    targets = [(opt, path) for opt, path in (("--json", args.json), ("--html", args.html)) if path]
    for opt, path in targets:
        check_target(opt, path)
    check_distinct([(f"{opt} {brief(path)}", path) for opt, path in targets])
    if not args.bench:
        if targets:
            raise UsageError("--json and --html write the series of benchmarks: name them, "
                             "e.g. `ipclab history messaging/pipe --json F`")
        conn = history.open_store(args.store)
        try:
            print(history.listing(history.benchmark_counts(conn)))
        finally:
            conn.close()
        return 0
    store, shown, whose = _history_series(args.store, args.bench, args.machine, args.all_flags)
    print(f"{len(shown)} series from {store}: {whose}")
    for s in shown:
        print()
        print(history.series_text(s))
    if args.json:
        write_atomic(args.json, history.json_text(store, shown))
        print(f"wrote {args.json}", file=sys.stderr)
    if args.html:
        from . import html

        write_atomic(args.html, html.render_history(store, shown, whose))
        print(f"wrote {args.html}", file=sys.stderr)
    return 0


def cmd_screenshot(args):
    from .screenshot import screenshot

    print(screenshot(args.html, args.png, args.width, args.height))
    return 0


class StdoutLost(Exception):
    """A write to stdout failed: args[0] is the OSError."""


class GuardedStdout:
    """sys.stdout, whose failed writes raise StdoutLost: told apart from any other file's."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text):
        try:
            return self.stream.write(text)
        except OSError as e:
            raise StdoutLost(e) from None

    def flush(self):
        try:
            self.stream.flush()
        except OSError as e:
            raise StdoutLost(e) from None

    def __getattr__(self, name):
        return getattr(self.stream, name)


def stdout_lost(e: OSError) -> int:
    """A write to stdout failed (a full disk, a closed pipe): one line, exit 1; stdout then goes
    nowhere, so that the interpreter's own flush at exit does not fail again with a traceback."""
    print(f"{PROG}: cannot write to standard output ({e.strerror or e}); check where it goes "
          "(a full disk, a closed pipe)", file=sys.stderr)
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):
        pass
    return 1


def main(argv=None) -> int:
    real = sys.stdout
    sys.stdout = GuardedStdout(real)
    try:
        rc = run(argv)
        sys.stdout.flush()
        return rc
    except StdoutLost as lost:
        return stdout_lost(lost.args[0])
    finally:
        sys.stdout = real


OUT_OF_MEMORY = (f"{PROG}: out of memory (the input is larger than this machine, or its ulimit -v, lets "
                 "the report hold); give it more memory, or split the run into a result file per suite "
                 "(`ipclab run SUITE --json SUITE.json`)")


def run(argv=None) -> int:
    """The command's exit status; running out of memory is one line and exit 1, whatever ran out."""
    try:
        return _run(argv)
    except MemoryError:
        pass  # left here, where the frames that held the memory are gone, so the line can be printed
    try:
        print(OUT_OF_MEMORY, file=sys.stderr)
    except MemoryError:
        pass
    return 1


def _run(argv=None) -> int:
    args = None
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv[:1] == ["ab"]:  # its own parser (ab.py): the run arguments it passes on are many
            from .ab import cmd_ab

            args = argparse.Namespace(command="ab")
            return cmd_ab(argv[1:])
        if argv[:1] == ["agree"]:  # its own parser and the reference tools: agree/__init__.py
            from .agree import cmd_agree

            args = argparse.Namespace(command="agree")
            return cmd_agree(argv[1:])
        args = parser().parse_args(argv)
        if args.command is None:
            raise UsageError("name a command: report, compare, history or screenshot; see `ipclab --help`")
        return {"report": cmd_report, "compare": cmd_compare, "history": cmd_history,
                "screenshot": cmd_screenshot}[args.command](args)
    except UsageError as e:
        cmd = f" {args.command}" if args is not None and getattr(args, "command", None) else ""
        print(f"{PROG}{cmd}: {brief(e, 600)}", file=sys.stderr)
        return 2
    except RecursionError:  # an input nested deeper than any result file
        print(f"{PROG}: an input is nested too deeply to be a result file; pass a result file written by "
              "`ipclab run --json F`", file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"{PROG}: {brief(e, 600)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
