package stored

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestEncodeJournalIsJournalEncode: the hand-made encoding decodes to
// what the reflecting one does, for jobs of any name and items of any
// number, with no runs, empty runs and many; and it is the same bytes
// when the items' order by number is their order as strings.
func TestEncodeJournalIsJournalEncode(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "b", "report", "job-<&>", "naïve", "q\"uote", "x\\y", "tab\tbed"}
	for round := range 300 {
		var doc Journal
		var entries []JournalEntry
		seen := map[[2]any]bool{}
		for range rng.IntN(40) {
			job, item := names[rng.IntN(len(names))], rng.IntN(12000)
			if seen[[2]any{job, item}] {
				continue
			}
			seen[[2]any{job, item}] = true
			var ran [][2]int64
			switch rng.IntN(4) {
			case 0: // nil: no runs
			case 1:
				ran = [][2]int64{}
			default:
				for range 1 + rng.IntN(4) {
					f := rng.Int64N(1 << 42)
					ran = append(ran, [2]int64{f, f + rng.Int64N(1e6)})
				}
			}
			doc.Put(job, item, ran)
			entries = append(entries, JournalEntry{Job: job, Item: item, Ran: ran})
		}
		server := names[round%len(names)]
		doc.Server = server
		got, want := EncodeJournal(server, entries), doc.Encode()
		gotDoc, err := DecodeJournal(got)
		if err != nil {
			t.Fatalf("round %d: %s does not decode: %v", round, got, err)
		}
		wantDoc, _ := DecodeJournal(want)
		if !reflect.DeepEqual(gotDoc, wantDoc) {
			t.Fatalf("round %d:\n got %s\nwant %s", round, got, want)
		}
		if len(entries) == 1 && !bytes.Equal(got, want) {
			t.Fatalf("round %d, one entry:\n got %s\nwant %s", round, got, want)
		}
	}
}

// BenchmarkJournalEncode encodes the journal of one completion of a
// 10,000-item job, its entries read from a map as the journal keeps them,
// by the document's maps (Journal.Encode) and by hand (EncodeJournal).
func BenchmarkJournalEncode(b *testing.B) {
	const items = 10000
	kept := make(map[int][][2]int64, items)
	for it := range items {
		kept[it] = [][2]int64{{1764547200000, 1764547200000}}
	}
	b.Run("maps", func(b *testing.B) {
		for b.Loop() {
			doc := Journal{Server: "s1"}
			for it, ran := range kept {
				doc.Put("big", it, ran)
			}
			_ = doc.Encode()
		}
	})
	b.Run("by-hand", func(b *testing.B) {
		for b.Loop() {
			entries := make([]JournalEntry, 0, len(kept))
			for it, ran := range kept {
				entries = append(entries, JournalEntry{Job: "big", Item: it, Ran: ran})
			}
			_ = EncodeJournal("s1", entries)
		}
	})
}

func ExampleEncodeJournal() {
	fmt.Printf("%s\n", EncodeJournal("s1", []JournalEntry{{Job: "report", Item: 10, Ran: [][2]int64{{1000, 3000}}}, {Job: "report", Item: 9}}))
	// Output: {"server":"s1","jobs":{"report":{"9":null,"10":[[1000,3000]]}}}
}
