"""How long a run takes, said before it runs (issue 36): --plan's estimate_s, --dry-run, --budget,
the cost model learned from past runs in the user's state folder (XDG_STATE_HOME, here the
sandbox's `state`), and the progress lines on stderr when it is not a terminal."""
import json
import os
import re
import stat

import pytest

NULL2 = ["harness/null", "-p", "placement=same,unpinned"]  # two points that cost only their window
PIPES = ["messaging/pipe", "-p", "pattern=roundtrip", "-p", "size=64,128,256,512,1024,2048,4096,8192"]


def other_lines(stderr: str):
    return [l for l in stderr.splitlines() if l.strip() and not l.startswith(("warning: ", "progress: "))]


def seconds(text: str) -> float:
    """duration_text back to seconds: 45s, 4m40s, 1h05m."""
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    assert m and text, text
    h, mi, s = (int(g) if g else 0 for g in m.groups())
    return 3600 * h + 60 * mi + s


def model_dir(lab):
    return lab.root / "state" / "ipclab"


def nothing_created(lab):
    assert lab.leftovers() == [], lab.leftovers()
    assert not (lab.root / "state").exists(), "the state folder was created"
    assert list(lab.work.iterdir()) == [], list(lab.work.iterdir())


def test_dry_run_prints_points_and_estimates_per_suite_and_creates_nothing(lab):
    r = lab.run("run", "--preset", "quick", "--dry-run", "--out", "results")
    assert r.returncode == 0, r.stderr
    assert other_lines(r.stderr) == [], r.stderr
    nothing_created(lab)  # not the run folder, the results, nor the state folder
    plan = [json.loads(l) for l in lab.run("run", "--preset", "quick", "--plan").stdout.splitlines()]
    points = {}
    for b in plan:
        points[b["suite"]] = points.get(b["suite"], 0) + 1
    rows = {}
    for line in r.stdout.splitlines():
        words = line.split()
        if len(words) == 3 and (words[0] in points or words[0] == "all"):
            rows[words[0]] = (int(words[1]), seconds(words[2]))
    assert {s: n for s, (n, _) in rows.items() if s != "all"} == points, r.stdout
    assert rows["all"][0] == len(plan), r.stdout
    # The total is the plan's: the sum of its points' estimates (each line rounds to the second).
    total = sum(b["estimate_s"] for b in plan)
    assert abs(rows["all"][1] - total) <= 1, (rows["all"], total)
    assert abs(sum(t for s, (_, t) in rows.items() if s != "all") - total) <= len(points), r.stdout
    # The quick preset fits its own budget of five minutes.
    assert total <= 300, total
    assert re.search(r"^budget 5m \(the preset's\): .*; estimate \S+$", r.stdout, re.M), r.stdout


def test_plan_estimates_come_from_the_plan(lab):
    r = lab.run("run", *NULL2, "--duration", "0.5", "--warmup", "0.1", "--repetitions", "3", "--plan")
    assert r.returncode == 0, r.stderr
    plan = [json.loads(l) for l in r.stdout.splitlines()]
    assert len(plan) == 2
    for b in plan:  # nothing learned yet: three repetitions of warm-up, window and the default start-up
        assert b["estimate_s"] == pytest.approx(3 * (0.5 + 0.1 + 0.05)), b
    nothing_created(lab)


@pytest.mark.parametrize("value", ["", "m", "5x", "0s", "0.5", "-1m", "nanm", "infh", "5 m", "1001h", "5M", "s5"])
def test_bad_budget_is_refused(lab, value):
    r = lab.run("run", *NULL2, "--budget", value, "--json", "r.json")
    err = other_lines(r.stderr)
    assert r.returncode == 2, (r.returncode, err)
    assert len(err) == 1 and err[0].startswith("ipclab: --budget"), err
    assert "e.g. --budget 5m" in err[0], err
    nothing_created(lab)


def test_budget_too_small_is_refused_before_anything_exists(lab):
    n = len(lab.run("run", *PIPES, "--plan").stdout.splitlines())
    assert n == 8
    r = lab.run("run", *PIPES, "--budget", "1s", "--out", "results")  # 8 × 0.3 s at the floors
    err = other_lines(r.stderr)
    assert r.returncode == 2, (r.returncode, err)
    assert len(err) == 1 and err[0].startswith("ipclab: budget 1s: the 8 planned points"), err
    assert "give a larger budget, e.g. --budget 3s" in err[0] and "narrower selection" in err[0], err
    assert r.stdout == ""
    nothing_created(lab)


def test_budget_shortens_windows_and_the_records_obey_it(lab):
    # Two points × two repetitions of 1 s + 0.1 s warm-up are ~4.6 s; 2 s holds windows of 0.4 s.
    r = lab.run("run", *NULL2, "--duration", "1", "--warmup", "0.1", "--repetitions", "2", "--budget", "2s",
                "--json", "r.json")
    assert r.returncode == 0, r.stderr
    line = [l for l in r.stderr.splitlines() if l.startswith("budget ")][0]  # the fit, before the run
    # 2 × 2 × (window + 0.05 s warm-up + 0.05 s start-up) ≤ 2 s: windows of 0.4 s.
    assert line.startswith("budget 2s: windows 1→0.4 s, warm-up 0.1→0.05 s; estimate "), line
    doc = json.loads((lab.work / "r.json").read_text())
    budget = doc["context"]["budget"]
    assert budget["limit_s"] == 2 and budget["source"] == "--budget" and budget["fitted"] is True, budget
    assert budget["asked"] == {"duration_s": 1, "warmup_s": 0.1, "repetitions": 2}, budget
    assert budget["ran"] == {"duration_s": 0.4, "warmup_s": 0.05, "repetitions": 2}, budget
    assert budget["estimate_s"] <= 2 + 1e-6, budget
    assert doc["context"]["duration_s"] == 0.4 and doc["context"]["warmup_s"] == 0.05
    iterations = [b for b in doc["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
    assert len(iterations) == 4, "no point and no repetition was dropped"
    for b in iterations:  # the window the record measured is the fitted one, not the 1 s asked —
        # or, for the second point, the one the pacing gave it (its own extra.window), as short or
        # as long as what the first left of the budget allows, never beyond the 1 s asked.
        assert b["status"] == "ok", b
        window = b.get("extra", {}).get("window", {"duration_s": 0.4})["duration_s"]
        assert 0.2 <= window <= 1, b["extra"]
        assert window * 0.99 <= b["wall_s"] < window + 0.4, (b["wall_s"], window)
    assert "window" not in iterations[0].get("extra", {}), "the first point runs with the fitted windows"


def plant_cost_model(lab, mechanism, start_up_s, planned_s):
    """A cost model that holds one observation of `mechanism`: a start-up of `start_up_s` beyond a
    warm-up and window of `planned_s` (the file's own format, core/plan/estimate.cpp)."""
    folder = model_dir(lab)
    folder.mkdir(parents=True, mode=0o700)
    entry = {"overhead_s": start_up_s, "samples": 1, "recent": [start_up_s], "planned": [planned_s]}
    (folder / "costs.json").write_text(json.dumps({"version": 1, "mechanisms": {mechanism: entry}, "points": {}}))


def test_a_pessimistic_estimate_gives_the_later_points_their_windows_back(lab):
    # The model holds a start-up of 1 s for harness/null (it takes milliseconds): two points × two
    # repetitions of (1 s + 0.1 s + 1 s) do not fit 6 s, so the fit shortens the windows to 0.45 s.
    # The first point shows the start-up is milliseconds; the second is paced to what is left
    # (~5 s for 2 × 1.1 s): the 1 s asked, not the 0.45 s feared.
    plant_cost_model(lab, "harness/null", 1.0, 1.1)
    r = lab.run("run", *NULL2, "--duration", "1", "--warmup", "0.1", "--repetitions", "2", "--budget", "6s",
                "--json", "r.json")
    assert r.returncode == 0, r.stderr
    fit, paced = [l for l in r.stderr.splitlines() if l.startswith("budget ")]
    assert fit.startswith("budget 6s: windows 1→0.45 s, warm-up 0.1→0.05 s; estimate "), fit
    assert paced.startswith("budget 6s: 1 of 2 points ran with windows of 1 s, not 0.45 s: fitted again"), paced
    doc = json.loads((lab.work / "r.json").read_text())
    assert doc["context"]["duration_s"] == 0.45, doc["context"]["budget"]
    first, second = ([b for b in doc["benchmarks"] if b["name"] == n and b.get("run_type") != "aggregate"]
                     for n in dict.fromkeys(b["name"] for b in doc["benchmarks"]))
    for b in first:
        assert "window" not in b.get("extra", {}) and 0.45 <= b["wall_s"] < 0.85, b
    for b in second:
        assert b["extra"]["window"] == {"duration_s": 1, "warmup_s": 0.1}, b["extra"]
        assert 0.99 <= b["wall_s"] < 1.4, b["wall_s"]


def test_budget_that_holds_the_plan_changes_nothing(lab):
    r = lab.run("run", *NULL2, "--duration", "0.05", "--warmup", "0", "--repetitions", "1", "--budget", "1h",
                "--json", "r.json")
    assert r.returncode == 0, r.stderr
    assert re.search(r"^budget 1h: fits as planned; estimate \d+s$", r.stderr, re.M), r.stderr
    budget = json.loads((lab.work / "r.json").read_text())["context"]["budget"]
    assert budget["fitted"] is False and budget["asked"] == budget["ran"], budget


def test_cost_model_is_written_privately_and_reused(lab):
    r = lab.run("run", *NULL2, "--duration", "0.05", "--warmup", "0", "--repetitions", "2")
    assert r.returncode == 0, r.stderr
    folder = model_dir(lab)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    # Only the model: each save's temporary was renamed over it, none left behind.
    assert sorted(p.name for p in folder.iterdir()) == ["costs.json"]
    path = folder / "costs.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    model = json.loads(path.read_text())
    entry = model["mechanisms"]["harness/null"]
    assert entry["samples"] == 4 and entry["overhead_s"] >= 0, entry
    # Each point learns its own start-up beside its mechanism's: two repetitions each.
    points = model["points"]
    assert sorted(points) == ["harness/null/placement:same", "harness/null/placement:unpinned"], points
    assert all(p["samples"] == 2 and p["overhead_s"] >= 0 for p in points.values()), points
    assert lab.leftovers() == [f"ipclab-{os.geteuid()}"], lab.leftovers()  # no temporary left in the run's

    # A plan after it estimates each point with what it learned, not the default start-up term (a
    # point not run before takes its mechanism's: the unit tests).
    plan = [json.loads(l) for l in
            lab.run("run", *NULL2, "--duration", "1", "--warmup", "0", "--repetitions", "1", "--plan").stdout.splitlines()]
    assert len(plan) == 2, plan
    for b in plan:
        assert b["estimate_s"] == pytest.approx(1 + points[b["name"]]["overhead_s"], abs=1e-3), (b, points)
    dry = lab.run("run", *NULL2, "--dry-run")
    assert "learned from past runs for 2 of 2 points and 1 of 1 mechanisms" in dry.stdout, dry.stdout

    # A second run takes the model further.
    assert lab.run("run", *NULL2, "--duration", "0.05", "--warmup", "0", "--repetitions", "1").returncode == 0
    model = json.loads(path.read_text())
    assert model["mechanisms"]["harness/null"]["samples"] == 6
    assert model["points"]["harness/null/placement:same"]["samples"] == 3


def test_state_folder_open_to_others_is_not_used(lab):
    folder = model_dir(lab)
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    r = lab.run("run", *NULL2, "--duration", "0.05", "--warmup", "0", "--repetitions", "1")
    assert r.returncode == 0, r.stderr
    warnings = [l for l in r.stderr.splitlines() if l.startswith("warning: cannot keep the cost model")]
    assert len(warnings) == 1 and "not a folder of yours closed to others" in warnings[0], r.stderr
    assert list(folder.iterdir()) == []


def test_progress_lines_per_suite_when_stderr_is_not_a_terminal(lab):
    args = ["harness/null", "messaging/pipe", "-p", "size=64", "-p", "pattern=roundtrip",
            "--duration", "0.05", "--warmup", "0", "--repetitions", "1"]
    points = {}
    for line in lab.run("run", *args, "--plan").stdout.splitlines():
        suite = json.loads(line)["suite"]
        points[suite] = points.get(suite, 0) + 1
    assert set(points) == {"harness", "messaging"}
    r = lab.run("run", *args)
    assert r.returncode == 0, r.stderr
    progress = [l for l in r.stderr.splitlines() if l.startswith("progress: ")]
    shape = re.compile(r"progress: (\w+) (\d+)/(\d+) points \((\d+)/(\d+) in all\), (\S+) elapsed, ~(\S+) left")
    seen = [shape.fullmatch(l) for l in progress]
    assert all(seen), progress
    # Each suite as it starts (nothing of it done) and as it ends (all of it done); between, a line
    # every few seconds (none in a run this short, unless the machine is slow), never going back.
    by_suite = {}
    for m in seen:
        by_suite.setdefault(m[1], []).append((int(m[2]), int(m[3])))
    assert set(by_suite) == set(points), progress
    for s, n in points.items():
        assert by_suite[s][0] == (0, n) and by_suite[s][-1] == (n, n), progress
        assert by_suite[s] == sorted(by_suite[s]), progress
    assert all(int(m[5]) == sum(points.values()) for m in seen), progress
    assert int(seen[-1][4]) == sum(points.values()), "every point done at the end"
    assert seconds(seen[-1][7]) == 0, "nothing is left once the last suite ends"
