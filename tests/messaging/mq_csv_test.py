"""The messaging CSV's reference columns (reference 002) mean what they meant there: runs
messaging/posix_mq with -p latency_reservoir=N and checks each of the 20 columns against the
JSON record of the same run. Usage: mq_csv_test.py IPCLAB. Exit 77 (skip) when POSIX mq cannot
be opened here."""
import csv, json, math, subprocess, sys, tempfile, os

REF = ["backend", "queueName", "duration", "messageSize", "maxMessages", "producers", "consumers",
       "nonBlocking", "randomPayload", "latencySample", "elapsedSec", "recv", "bytesRecv", "msgPerSec",
       "MiBps", "p50us", "p90us", "p95us", "p99us", "p999us"]


def run(ipclab, d, extra):
    j, c = os.path.join(d, "r.json"), os.path.join(d, "r.csv")
    p = subprocess.run([ipclab, "run", "messaging/posix_mq", "-p", "pattern=throughput", "-p", "size=256",
                        "-p", "mode=threads", "-p", "placement=unpinned", "-p", "queue_depth=8", *extra,
                        "--duration", "0.05", "--warmup", "0.01", "--repetitions", "1", "--json", j, "--csv", c],
                       capture_output=True, text=True)
    return p, j, c


def main():
    ipclab = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        p, j, c = run(ipclab, d, ["-p", "latency_reservoir=500"])
        if p.returncode != 0 and ("mq_open" in p.stderr or "mqueue" in p.stderr):
            print("SKIP: POSIX mq unusable here: " + p.stderr.strip().splitlines()[-1])
            return 77
        assert p.returncode == 0, p.stderr
        rec = json.load(open(j))["benchmarks"][0]
        rows = list(csv.DictReader(open(c)))
        assert len(rows) == 1
        header = next(csv.reader(open(c)))
        assert header[:20] == REF, header[:20]
        row = rows[0]
        assert row["backend"] == "mqueue"
        assert row["queueName"] == rec["extra"]["object"]
        assert float(row["duration"]) == 0.05
        assert row["messageSize"] == "256"
        assert row["maxMessages"] == "8"  # the depth asked for, as the reference wrote it
        assert row["producers"] == "1" and row["consumers"] == "1"
        assert row["nonBlocking"] in ("0", "1") and row["randomPayload"] in ("0", "1")
        assert row["latencySample"] == "500"  # the reservoir's size
        recv, secs = int(row["recv"]), float(row["elapsedSec"])
        assert recv == rec["ops"] and recv > 0
        assert int(row["bytesRecv"]) == recv * 256 == rec["bytes"]
        assert math.isclose(float(row["msgPerSec"]), recv / secs, rel_tol=1e-3, abs_tol=0.01)
        assert math.isclose(float(row["MiBps"]), recv * 256 / 2**20 / secs, rel_tol=1e-3, abs_tol=0.01)
        res = rec["extra"]["reservoir"]
        assert res["size"] == 500 and res["kept"] == min(500, res["seen"]) and res["seen"] > 0
        ps = [float(row[k]) for k in ("p50us", "p90us", "p95us", "p99us", "p999us")]
        assert all(v >= 0 for v in ps) and ps == sorted(ps), ps
        # The reference's columns are the reservoir's, ours the histogram's.
        assert ps[0] == round(res["p50_us"], 2) and row["hist_p50_us"] != ""
        assert row["reference_percentiles"] == "reservoir"
        # Our stride: the one the producer chose (latency_sample=0), as the record says.
        assert row["latency_sample"] == str(rec["extra"]["latency_sample"]), (row["latency_sample"], rec["extra"])

        # Without a reservoir (the reference wrote nan): latencySample 0, and the percentiles from
        # our full histogram of the one-way latencies, saying so.
        os.remove(c)
        p, j, c = run(ipclab, d, [])
        assert p.returncode == 0, p.stderr
        row = list(csv.DictReader(open(c)))[0]
        rec = json.load(open(j))["benchmarks"][0]
        assert row["latencySample"] == "0" and row["reference_percentiles"] == "histogram"
        assert rec["latency_ns"]["kind"] == "one_way" and "reservoir" not in rec["extra"]
        assert row["p50us"] == f'{rec["latency_ns"]["p50"] / 1000:.2f}', row
        assert float(row["hist_p50_us"]) == rec["latency_ns"]["p50"] / 1000, row

        # Round trips have no one-way latency to sample: a usage error before any work.
        p, _, _ = run(ipclab, d, ["-p", "latency_reservoir=10", "-p", "pattern=roundtrip"])
        assert p.returncode == 2 and "latency_reservoir" in p.stderr, (p.returncode, p.stderr)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
