package admin_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/admin"
	"github.com/shardjob/shardjob/job"
)

// TestJobCodec: the one codec of the command and the HTTP handler decodes
// as the instances do, stores the canonical document, and looks the
// strategy up only when asked to.
func TestJobCodec(t *testing.T) {
	ctx := context.Background()
	doc := []byte("name: report\ncron: '0 0 3 * * *'\nshardingTotalCount: 4\nshardingStrategy: MINE\n")

	cfg, err := admin.JobCodec(false)(ctx, doc)
	if err != nil {
		t.Fatalf("without the strategy lookup: %v", err)
	}
	jc, err := job.DecodeConfigContext(ctx, doc)
	if err != nil {
		t.Fatal(err)
	}
	want, err := jc.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "report" || cfg.ShardingTotalCount != 4 || !bytes.Equal(cfg.Document, want) {
		t.Errorf("decoded %+v, document %q; want the instances' canonical document %q", cfg, cfg.Document, want)
	}
	from := time.Date(2026, 1, 1, 12, 0, 0, 0, time.Local)
	if cfg.Next == nil || !cfg.Next(from).Equal(time.Date(2026, 1, 2, 3, 0, 0, 0, time.Local)) {
		t.Errorf("Next is missing or wrong")
	}

	if _, err := admin.JobCodec(true)(ctx, doc); !errors.Is(err, job.ErrInvalidConfig) || !strings.Contains(err.Error(), "MINE") {
		t.Errorf("with the strategy lookup: %v, want ErrInvalidConfig naming MINE", err)
	}
	if _, err := admin.JobCodec(false)(ctx, []byte("name: report\ncron: '* * * *'\n")); !errors.Is(err, job.ErrInvalidConfig) {
		t.Errorf("bad document: %v, want ErrInvalidConfig", err)
	}
}

func TestWriteJSON(t *testing.T) {
	var b strings.Builder
	if err := admin.WriteJSON(&b, map[string]any{"error": "send <token> & retry"}); err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"error\": \"send <token> & retry\"\n}\n"; b.String() != want {
		t.Errorf("WriteJSON = %q, want %q", b.String(), want)
	}
}
