package layout

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestFormatItemsCompressesRuns(t *testing.T) {
	for _, tt := range []struct {
		items []int
		want  string
	}{
		{nil, ""},
		{[]int{0}, "0"},
		{[]int{0, 1}, "0,1"},
		{[]int{0, 1, 2}, "0-2"},
		{[]int{0, 2, 3, 4, 9}, "0,2-4,9"},
		{[]int{3, 4, 7, 8}, "3,4,7,8"},
	} {
		if got := FormatItems(tt.items); got != tt.want {
			t.Errorf("FormatItems(%v) = %q, want %q", tt.items, got, tt.want)
		}
	}
	big := make([]int, 333)
	for i := range big {
		big[i] = i
	}
	if got := FormatItems(big); got != "0-332" {
		t.Errorf("333 consecutive items: %q", got)
	}
}

func TestParseItemsRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for range 1000 {
		var items []int
		for i := range 60 {
			if rng.IntN(3) > 0 {
				items = append(items, i)
			}
		}
		got, err := ParseItems(FormatItems(items))
		if err != nil || !slices.Equal(got, items) {
			t.Fatalf("%v -> %q -> %v, %v", items, FormatItems(items), got, err)
		}
	}
	if got, err := ParseItems(" 0 , 2 - 4 "); err != nil || !slices.Equal(got, []int{0, 2, 3, 4}) {
		t.Fatalf("spaces: %v, %v", got, err)
	}
}

func TestParseItemsRefusesGarbage(t *testing.T) {
	for _, s := range []string{"a", "1,,2", "-1", "3-1", "1-", "1-2-3", "0-9999999999"} {
		if _, err := ParseItems(s); err == nil {
			t.Errorf("ParseItems(%q) accepted", s)
		}
	}
	_, err := ParseItems("0-2147483646")
	var ie *ItemsError
	if !errors.As(err, &ie) || !ie.TooMany {
		t.Fatalf("a range of 2^31 items: %v; want a refusal for size, not an allocation", err)
	}
	if _, err := ParseItems("0-1048574,2000000"); err != nil {
		t.Fatalf("MaxListItems items: %v", err)
	}
}

func TestDefinitionIsAJobNodeOfItsOwn(t *testing.T) {
	j := Job("orders-sync")
	if got := j.Definition(); got != "/orders-sync/definition" {
		t.Fatalf("Definition() = %q", got)
	}
	for _, other := range []string{j.Config(), j.Servers(), j.Execution(), j.Leader(), j.DisabledItems(), j.Unplaced()} {
		if other == j.Definition() {
			t.Fatalf("Definition() is the same node as %q", other)
		}
	}
}

// TestPathsNest checks that each path, built in one concatenation, is its
// parent's path and its own name.
func TestPathsNest(t *testing.T) {
	j := Job("orders")
	for _, tt := range []struct{ got, want string }{
		{j.Root(), "/orders"},
		{j.Config(), j.Root() + "/config"},
		{j.Servers(), j.Root() + "/servers"},
		{j.Server("10.0.0.5"), j.Servers() + "/10.0.0.5"},
		{j.Flag("10.0.0.5", Paused), j.Server("10.0.0.5") + "/paused"},
		{j.Execution(), j.Root() + "/execution"},
		{j.Item(12), j.Execution() + "/12"},
		{j.ItemNode(12, Running), j.Item(12) + "/running"},
		{j.ItemNode(0, Completed), "/orders/execution/0/completed"},
		{j.FailoverItems(), j.Leader() + "/failover/items"},
		{j.FailoverItem(7), j.FailoverItems() + "/7"},
	} {
		if tt.got != tt.want {
			t.Errorf("path %q, want %q", tt.got, tt.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = j.ItemNode(12, Running) }); n > 1 {
		t.Errorf("ItemNode allocates %v times, want at most 1", n)
	}
}
