package tracing

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestOffDoesNothing(t *testing.T) {
	var tr *Tracer
	ft := tr.StartFire(context.Background(), FireFacts{Job: "j"})
	if ft != nil {
		t.Fatal("a nil tracer started a fire's span")
	}
	ctx := context.Background()
	got, span := ft.StartItem(ctx, RunFacts{Job: "j"})
	if got != ctx || span != nil {
		t.Fatal("tracing off, an item's span was started")
	}
	ft.EndItem(span, errors.New("x"), nil)
	ft.EndAttempt(span, 1, errors.New("x"), nil, true)
	ft.End()
	if n := testing.AllocsPerRun(100, func() {
		f := tr.StartFire(ctx, FireFacts{Job: "j"})
		_, s := f.StartItem(ctx, RunFacts{Job: "j"})
		f.EndItem(s, nil, nil)
		f.End()
	}); n != 0 {
		t.Fatalf("tracing off allocates %v per fire", n)
	}
}

func TestAFireCountsItsFailedItemsButNotRetriedAttempts(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tr := New(tp)
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	ft := tr.StartFire(context.Background(), FireFacts{Job: "j", Kind: "fire", ServerID: "s1", At: at, Items: 3})
	failed := errors.New("boom")
	_, ok := ft.StartItem(context.Background(), RunFacts{Job: "j", First: 0, Last: 0, At: at, Through: at})
	ft.EndItem(ok, nil, nil)
	_, retried := ft.StartItem(context.Background(), RunFacts{Job: "j", First: 1, Last: 1, At: at, Through: at})
	ft.EndAttempt(retried, 1, failed, nil, true)
	_, last := ft.StartItem(context.Background(), RunFacts{Job: "j", First: 1, Last: 2, At: at, Through: at})
	ft.EndAttempt(last, 2, failed, nil, false)
	ft.End()

	spans := exp.GetSpans()
	if len(spans) != 4 {
		t.Fatalf("%d spans, want 4", len(spans))
	}
	fire := spans[3]
	if fire.Name != FireSpanName || fire.Status.Code != codes.Error {
		t.Fatalf("fire span %s status %v", fire.Name, fire.Status)
	}
	attrs := map[string]string{}
	for _, a := range fire.Attributes {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	if attrs[string(AttrFailedItems)] != "1" || attrs[string(AttrFireTime)] != "2026-12-03T10:00:00Z" {
		t.Fatalf("fire attributes %v", attrs)
	}
	for i, want := range []codes.Code{codes.Ok, codes.Error, codes.Error} {
		if spans[i].Name != ItemSpanName || spans[i].Status.Code != want || spans[i].Parent.SpanID() != fire.SpanContext.SpanID() {
			t.Fatalf("item span %d: %s %v parent %v", i, spans[i].Name, spans[i].Status, spans[i].Parent.SpanID())
		}
	}
	var lastItem bool
	for _, a := range spans[2].Attributes {
		lastItem = lastItem || a.Key == AttrLastItem
	}
	if !lastItem {
		t.Fatal("a run of two items has no last item attribute")
	}
}
