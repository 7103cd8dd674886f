package job

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/layout"
	"github.com/shardjob/shardjob/job/internal/completion"
	"github.com/shardjob/shardjob/job/internal/stored"
	"github.com/shardjob/shardjob/regcenter"
	"github.com/shardjob/shardjob/regcenter/zktest"
)

// readMark reads item's completed record.
func readMark(t *testing.T, r *runner, rc regcenter.Center, item int) (stored.Completed, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	data, _, err := rc.Get(ctx, r.paths.ItemNode(item, layout.Completed))
	if err != nil {
		return stored.Completed{}, err
	}
	var m stored.Completed
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("item %d: record %q: %v", item, data, err)
	}
	return m, nil
}

// TestCompletionTooLargeIsSplit: the completion of a fire of 1,000 items
// that end together, each failed with an error the record keeps whole
// (4 MB of records in all, more than a transaction takes), is written in
// parts, every item's record with it — not given up, which would leave
// the fires looking unrun.
func TestCompletionTooLargeIsSplit(t *testing.T) {
	const items = 1000
	msg := strings.Repeat("e", stored.MaxRecordedError)
	var entered sync.WaitGroup
	entered.Add(items)
	all := make(chan struct{})
	go func() { entered.Wait(); close(all) }()
	together := SimpleFunc(func(ctx context.Context, _ ShardingContext) error {
		entered.Done()
		select { // every item ends at once: their results share transactions
		case <-all:
		case <-ctx.Done():
		case <-time.After(time.Minute):
		}
		return errors.New(msg)
	})
	cfg := Config{Name: "big", Cron: "0 0 0 1 1 *", ShardingTotalCount: items}
	_, r, rc := startOneJobWith(t, zktest.Start(t), "completesplit", cfg, together)
	if err := r.prepareSync(); err != nil {
		t.Fatal(err)
	}
	if perTxn := r.records.ItemsPerTxn(completion.TxnBytes, MaxShardingTotalCount); perTxn < items/4 {
		t.Fatalf("itemsPerTxn = %d: the test wants more than a transaction's worth of records in one", perTxn)
	}
	fire := time.Now().Truncate(time.Second)
	r.fireAssigned(rc.Session(), fire, KindFire, nil)
	for i := range items {
		m, err := readMark(t, r, rc, i)
		if err != nil {
			t.Fatalf("item %d: no record after the completion: %v", i, err)
		}
		if m.Fire != fire.UnixMilli() || m.Error != msg {
			t.Fatalf("item %d: record fire %d error of %d bytes, want fire %d and the error", i, m.Fire, len(m.Error), fire.UnixMilli())
		}
	}
}

// TestCompletionRecordsAHugeErrorCut: a run that fails with an error of
// 2 MB — more than a registry node holds — is recorded completed, its
// error cut to stored.MaxRecordedError bytes saying how much was left out, so
// that the fire is not taken for unrun.
func TestCompletionRecordsAHugeErrorCut(t *testing.T) {
	huge := strings.Repeat("é", 1<<20) // 2 MB, two bytes a character
	failing := SimpleFunc(func(context.Context, ShardingContext) error { return errors.New(huge) })
	cfg := Config{Name: "huge", Cron: "0 0 0 1 1 *", ShardingTotalCount: 1}
	_, r, rc := startOneJobWith(t, zktest.Start(t), "hugeerror", cfg, failing)
	if err := r.prepareSync(); err != nil {
		t.Fatal(err)
	}
	fire := time.Now().Truncate(time.Second)
	r.fireAssigned(rc.Session(), fire, KindFire, nil)
	m, err := readMark(t, r, rc, 0)
	if err != nil {
		t.Fatalf("no record after a run that failed with a 2 MB error: %v", err)
	}
	if m.Fire != fire.UnixMilli() {
		t.Errorf("record fire %d, want %d", m.Fire, fire.UnixMilli())
	}
	const want = "… (2093056 bytes more)"
	if len(m.Error) > stored.MaxRecordedError+len(want) || !strings.HasSuffix(m.Error, want) || !strings.HasPrefix(m.Error, "éé") {
		t.Errorf("record error of %d bytes ending %q, want it cut at %d bytes and ending %q", len(m.Error), m.Error[max(0, len(m.Error)-40):], stored.MaxRecordedError, want)
	}
}

// TestSmallTransactionLimit: on a registry that takes transactions of at
// most 16 KB (ZooKeeper with a lower jute.maxbuffer, an etcd cluster with
// a lower --max-txn-ops refuse theirs the same way), a fire of 1,000 items
// marks and completes them in as many smaller transactions as it takes:
// every item runs once and is recorded, none is left to run as a misfire.
func TestSmallTransactionLimit(t *testing.T) {
	const items = 1000
	var mu sync.Mutex
	ran := map[int]int{}
	count := SimpleFunc(func(_ context.Context, sc ShardingContext) error {
		mu.Lock()
		defer mu.Unlock()
		ran[sc.Item]++
		return nil
	})
	zc := zktest.Start(t)
	cfg := Config{Name: "small", Cron: "0 0 0 1 1 *", ShardingTotalCount: items}
	_, r, rc := startOneJobOn(t, regcenter.Config{Servers: zc.Servers(), Namespace: "smalltxn", MaxNodeBytes: 16 << 10}, cfg, count)
	if err := r.prepareSync(); err != nil {
		t.Fatal(err)
	}
	fire := time.Now().Truncate(time.Second)
	r.fireAssigned(rc.Session(), fire, KindFire, nil)
	for i := range items {
		m, err := readMark(t, r, rc, i)
		if err != nil {
			t.Fatalf("item %d: no record after the fire: %v", i, err)
		}
		if m.Fire != fire.UnixMilli() || m.Kind != string(KindFire) {
			t.Fatalf("item %d: record of fire %d (%s), want the fire %d", i, m.Fire, m.Kind, fire.UnixMilli())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range items {
		if ran[i] != 1 {
			t.Fatalf("item %d ran %d times, want once", i, ran[i])
		}
	}
}
