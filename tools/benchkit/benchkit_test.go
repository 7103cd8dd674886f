package benchkit

import (
	"math"
	"testing"
)

func TestPercentile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, c := range []struct {
		p    float64
		want float64
	}{{50, 5}, {99, 10}, {100, 10}, {0, 1}, {10, 1}, {11, 2}} {
		if got := Percentile(xs, c.p); got != c.want {
			t.Errorf("Percentile(p=%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if xs[0] != 5 {
		t.Errorf("percentile sorted its input: %v", xs)
	}
	if !math.IsNaN(Percentile(nil, 50)) || !math.IsNaN(Max(nil)) {
		t.Error("empty sample: want NaN")
	}
}

func TestParseMntr(t *testing.T) {
	m := ParseMntr("zk_version\t3.8.0-1, built on\nzk_packets_received\t1234\nzk_num_alive_connections\t2\n")
	if n, err := MntrInt(m, "zk_packets_received"); err != nil || n != 1234 {
		t.Errorf("zk_packets_received = %v, %v", n, err)
	}
	if _, err := MntrInt(m, "zk_missing"); err == nil {
		t.Error("missing key: no error")
	}
}

func TestParseWchs(t *testing.T) {
	c, p, total, err := ParseWchs("3 connections watching 12 paths\nTotal watches:14\n")
	if err != nil || c != 3 || p != 12 || total != 14 {
		t.Errorf("got %d %d %d %v", c, p, total, err)
	}
	if _, _, _, err := ParseWchs("nonsense"); err == nil {
		t.Error("nonsense: no error")
	}
}

func TestParseProcStatCPU(t *testing.T) {
	// Fields 14 and 15 (utime, stime) are 120 and 30; the name has a space
	// and a parenthesis.
	stat := "4242 (my (odd) prog) S 1 4242 4242 0 -1 4194560 100 0 0 0 120 30 0 0 20 0 5 0 100 1000 50"
	got, err := ParseProcStatCPU(stat)
	if err != nil || got != 150 {
		t.Errorf("got %d, %v; want 150", got, err)
	}
	if _, err := ParseProcStatCPU("garbage"); err == nil {
		t.Error("garbage: no error")
	}
}

func TestParseStatusRSS(t *testing.T) {
	n, err := ParseStatusRSS("Name:\tjava\nVmPeak:\t  100 kB\nVmRSS:\t    2048 kB\nThreads:\t3\n")
	if err != nil || n != 2048*1024 {
		t.Fatalf("got %d, %v; want %d", n, err, 2048*1024)
	}
	if _, err := ParseStatusRSS("Name:\tzombie\n"); err == nil {
		t.Fatal("a status without VmRSS: no error")
	}
	if _, err := ParseStatusRSS("VmRSS:\t12 MB\n"); err == nil {
		t.Fatal("a VmRSS not in kB: no error")
	}
}

func TestTable(t *testing.T) {
	var a, b KV
	a.Add("p50", MS(1.5)).Add("lost", "0/60")
	b.Add("lost", "1/60").Add("extra", 3).Add("lost", "2/60")
	got := Table([]string{"zookeeper", "etcd"}, [][]Pair{a.Pairs(), b.Pairs()})
	want := "| figure | zookeeper | etcd |\n| --- | --- | --- |\n" +
		"| p50 | 1.500ms | — |\n| lost | 0/60 | 2/60 |\n| extra | — | 3 |\n"
	if got != want {
		t.Errorf("Table:\n%s\nwant:\n%s", got, want)
	}
	if a.String() != " p50=1.500ms lost=0/60" {
		t.Errorf("String() = %q", a.String())
	}
}
