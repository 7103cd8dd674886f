package itemkeys

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func assign(t *testing.T, d Doc, keys []string, total int, from time.Time) (Doc, Change) {
	t.Helper()
	out, ch, err := Assign(d, keys, total, from)
	if err != nil {
		t.Fatalf("Assign(%q): %v", keys, err)
	}
	data, err := Encode(out)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(data)
	if err != nil {
		t.Fatalf("Decode(Encode(d)): %v\n%s", err, data)
	}
	if !slices.Equal(back.Cur.Keys, out.Cur.Keys) || !back.Cur.From.Equal(out.Cur.From) || !slices.Equal(back.Prev.Keys, out.Prev.Keys) {
		t.Fatalf("round trip changed the document: %+v != %+v", back, out)
	}
	return back, ch
}

func itemOf(keys []string, k string) int { return slices.Index(keys, k) }

func TestAKeyKeepsItsItemWhileListed(t *testing.T) {
	t0 := time.UnixMilli(1_000_000)
	d, ch := assign(t, Doc{}, []string{"tenant-c", "tenant-a", "tenant-b"}, 5, t0)
	if want := []string{"tenant-a", "tenant-b", "tenant-c", "", ""}; !slices.Equal(d.Cur.Keys, want) {
		t.Fatalf("first list: %q, want %q (sorted, lowest items first)", d.Cur.Keys, want)
	}
	if len(ch.Added) != 3 || len(ch.Removed) != 0 {
		t.Fatalf("change %+v", ch)
	}
	// b leaves, d and e come: a and c stay where they were; d takes b's
	// freed item, e the next free one.
	d2, ch := assign(t, d, []string{"tenant-e", "tenant-a", "tenant-d", "tenant-c"}, 5, t0.Add(time.Minute))
	for _, k := range []string{"tenant-a", "tenant-c"} {
		if itemOf(d2.Cur.Keys, k) != itemOf(d.Cur.Keys, k) {
			t.Fatalf("%s moved from item %d to %d", k, itemOf(d.Cur.Keys, k), itemOf(d2.Cur.Keys, k))
		}
	}
	if want := []string{"tenant-a", "tenant-d", "tenant-c", "tenant-e", ""}; !slices.Equal(d2.Cur.Keys, want) {
		t.Fatalf("second list: %q, want %q", d2.Cur.Keys, want)
	}
	if !slices.Equal(ch.Removed, []string{"tenant-b"}) || !slices.Equal(ch.Added, []string{"tenant-d", "tenant-e"}) {
		t.Fatalf("change %+v", ch)
	}
	// The list before stays for the fires before the new one's From.
	if got := d2.At(t0.Add(30 * time.Second)); !slices.Equal(got, d.Cur.Keys) {
		t.Fatalf("keys of a fire before From: %q, want the previous list %q", got, d.Cur.Keys)
	}
	if got := d2.At(t0.Add(time.Minute)); !slices.Equal(got, d2.Cur.Keys) {
		t.Fatalf("keys of the fire at From: %q", got)
	}
}

func TestAKeyListedAgainGetsItsItemBack(t *testing.T) {
	d, _ := assign(t, Doc{}, []string{"a", "b", "c"}, 4, time.Time{})
	d, _ = assign(t, d, []string{"a", "c"}, 4, time.Time{}) // b leaves item 1
	if d.Gone["b"] != 1 {
		t.Fatalf("b's item not remembered: %v", d.Gone)
	}
	d, _ = assign(t, d, []string{"a", "c", "x", "b"}, 4, time.Time{})
	if itemOf(d.Cur.Keys, "b") != 1 {
		t.Fatalf("b came back on item %d, want its item 1: %q", itemOf(d.Cur.Keys, "b"), d.Cur.Keys)
	}
	if _, still := d.Gone["b"]; still {
		t.Fatalf("a listed key is still remembered as gone: %v", d.Gone)
	}
}

func TestAnUnchangedListIsNotAChange(t *testing.T) {
	t0 := time.UnixMilli(5000)
	d, _ := assign(t, Doc{}, []string{"a", "b"}, 3, t0)
	d2, ch := assign(t, d, []string{"b", "a"}, 3, t0.Add(time.Hour))
	if !ch.Same() || !d2.Cur.From.Equal(t0) {
		t.Fatalf("same keys in another order: change %+v, from %v (want none, %v)", ch, d2.Cur.From, t0)
	}
}

func TestABadListChangesNothing(t *testing.T) {
	d, _ := assign(t, Doc{}, []string{"a"}, 2, time.Time{})
	long := strings.Repeat("k", MaxKeyLength+1)
	cases := []struct {
		keys []string
		want error
		says string
	}{
		{[]string{"a", "b", "c"}, ErrTooMany, "3 keys, the job has 2 items"},
		{[]string{"a", "a"}, ErrInvalidKey, `"a" is listed twice`},
		{[]string{""}, ErrInvalidKey, "empty"},
		{[]string{long}, ErrInvalidKey, "257 bytes"},
		{[]string{"a\nb"}, ErrInvalidKey, "control character"},
		{[]string{"\xff"}, ErrInvalidKey, "not UTF-8"},
	}
	for _, c := range cases {
		_, _, err := Assign(d, c.keys, 2, time.Time{})
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Assign(%.30q) = %v, want %v saying %q", c.keys, err, c.want, c.says)
		}
	}
	// Keys each within bounds whose document is over the limit.
	var many []string
	for i := range 4000 {
		many = append(many, fmt.Sprintf("%0250d", i))
	}
	if _, _, err := Assign(Doc{}, many, 4000, time.Time{}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a document of %d bytes: %v, want ErrTooLarge", 4000*253, err)
	}
}

func TestDecodeRefusesHostileDocuments(t *testing.T) {
	for _, data := range []string{
		``, `null x`, `{"keys":["a","a"]}`, `{"keys":["a\u0000"]}`, `{"from":"-5","keys":[]}`,
		`{"from":"soon","keys":[]}`, `{"keys":[],"gone":[{"key":"","item":1}]}`, `{"keys":[],"gone":[{"key":"a","item":-1}]}`,
		`{"keys":` + strings.Repeat(`"",`, MaxItems) + `""]}`,
	} {
		if _, err := Decode([]byte(data)); !errors.Is(err, ErrBadDoc) {
			t.Errorf("Decode(%.60q) = %v, want ErrBadDoc", data, err)
		}
	}
}

func TestALowerCountRehomesTheKeysBeyondIt(t *testing.T) {
	d, _ := assign(t, Doc{}, []string{"a", "b", "c", "d"}, 6, time.Time{})
	d, _ = assign(t, d, []string{"a", "c"}, 6, time.Time{}) // items 0 and 2
	d, _ = assign(t, d, []string{"a", "c", "e"}, 6, time.Time{})
	// Now lower the count to 2: c (item 2) must move, a stays.
	d2, _ := assign(t, d, []string{"a", "c"}, 2, time.Time{})
	if !slices.Equal(d2.Cur.Keys, []string{"a", "c"}) {
		t.Fatalf("keys over 2 items: %q", d2.Cur.Keys)
	}
}
