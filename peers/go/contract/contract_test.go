package contract

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func TestParseStandardArguments(t *testing.T) {
	a := NewArgs("p")
	n := a.Flags.Int("n", 1, "")
	if err := a.Parse([]string{"--n=7", "--duration=0.5", "--warmup=0", "--cpus=2,3"}); err != nil {
		t.Fatal(err)
	}
	if *n != 7 || a.Duration != 0.5 || a.Warmup != 0 || len(a.CPUs) != 2 || a.CPUs[1] != 3 {
		t.Fatalf("parsed n=%d %+v", *n, a)
	}
	for _, bad := range [][]string{{"--cpus=a"}, {"--nope=1"}, {"stray"}, {"--warmup=-1"}} {
		if err := NewArgs("p").Parse(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// A record line has the fields the harness requires (name, ops, wall_s, integrity) and the
// names of docs/json-schema.md.
func TestRecordLine(t *testing.T) {
	r := Record{Name: "runtime/switch_go", Integrity: Integrity{Sent: 4, Received: 4}}
	r.Measured(4, 2*time.Microsecond, CPU{UserS: 1e-6})
	var buf bytes.Buffer
	if err := r.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if bytes.Count(buf.Bytes(), []byte("\n")) != 1 {
		t.Fatalf("not one line: %q", buf.String())
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "ops", "wall_s", "integrity", "time_per_op_ns", "rates", "cpu"} {
		if _, ok := m[k]; !ok {
			t.Errorf("line lacks %s: %s", k, buf.String())
		}
	}
	if m["time_per_op_ns"].(float64) != 500 || m["integrity"].(map[string]any)["received"].(float64) != 4 {
		t.Errorf("line %s", buf.String())
	}
}
