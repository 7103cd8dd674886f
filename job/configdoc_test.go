package job

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// marshal builds the document from the name and a cached rest; it must be
// byte for byte what the encoder writes for the whole document.
func TestMarshalMatchesEncoder(t *testing.T) {
	names := []string{"a", "x", "r00001", "orders-sync", "123", "0x1F", "1e3", "1_000", "0o17", ".inf", "-.inf", ".nan",
		"true", "false", "yes", "no", "on", "off", "y", "n", "null", "Null", "NULL", "~", "-", "--", "---", "...", ".", "..",
		"-1", "+1", "1.5", "_", "a.b", "a-b", "a_b", "0", "00", "007", "1.", ".5", "TRUE", "Off",
		strings.Repeat("n", MaxNameLength), strings.Repeat("9", MaxNameLength), strings.Repeat("n", MaxNameLength+1),
		"a/b", "a b", "a:b", "é", "a\nb", "", "#x", "*x", "&x", "!x", "%x", "@x", "`x", "'x", "\"x", "{x", "[x", "|x", ">x", "?x"}
	rnd := rand.New(rand.NewPCG(1, 2))
	const alphabet = "aeinoldfrstuxyNOYTFLEIabc0123456789._-"
	for range 3000 {
		b := make([]byte, 1+rnd.IntN(6))
		for i := range b {
			b[i] = alphabet[rnd.IntN(len(alphabet))]
		}
		names = append(names, string(b))
	}
	configs := []Config{
		{Cron: "0 0 0 1 1 *", ShardingTotalCount: 1},
		{Cron: "*/5 * * * * *", ShardingTotalCount: 3, ShardingItemParameters: "0=a,1=b", JobParameter: "x: y\nz", Failover: true,
			Misfire: MisfireSkip, MaxTimeDiff: time.Second, ReconcileInterval: time.Minute, Description: strings.Repeat("long words ", 40),
			Disabled: true, Overwrite: true, TimeZone: "Europe/Berlin"},
	}
	for _, base := range configs {
		for _, n := range names {
			c := base
			c.Name = n
			for range 2 { // uncached, then cached
				got, err := c.marshal()
				if err != nil {
					t.Fatal(err)
				}
				want := c.marshalDoc()
				if !bytes.Equal(got, want) || !bytes.Equal(got, legacyEncode(c)) {
					t.Fatalf("name %q: marshal\n%s\nwant\n%s", n, got, want)
				}
			}
		}
	}
}

func TestConfigEncodeDocument(t *testing.T) {
	data, err := fullConfigForTest().Encode()
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, want := range []string{"name: orders-sync\n", "monitorExecution: false\n", "maxTimeDiff: 5s\n",
		"reconcileInterval: 1m30s\n", "misfire: skip\n", "shardingTotalCount: 4\n", "timeZone: Asia/Shanghai\n"} {
		if !strings.Contains(doc, want) {
			t.Errorf("document lacks %q:\n%s", want, doc)
		}
	}
	// Every key is written, in configFields' order (a dependency needs a
	// monitored job).
	dep := fullConfigForTest()
	dep.Unmonitored, dep.After, dep.OnParentFailure, dep.AfterTimeout = false, "extract,load", ParentAlert, 30*time.Second
	dep.RecordInterval = 20 * time.Second // an opt-in of a monitored job
	data, err = dep.Encode()
	if err != nil {
		t.Fatal(err)
	}
	doc = string(data)
	last := -1
	for _, f := range configFields {
		i := strings.Index(doc, "\n"+f.Key+":")
		if f.Key == "name" && strings.HasPrefix(doc, "name:") {
			i = 0
		}
		if i <= last {
			t.Errorf("key %q missing or out of order in:\n%s", f.Key, doc)
		}
		last = i
	}

	bad := validConfigForTest()
	bad.ShardingTotalCount = 0
	if _, err := bad.Encode(); !errors.Is(err, ErrInvalidShardingCount) {
		t.Errorf("Encode of an invalid config = %v, want ErrInvalidShardingCount", err)
	}
}
