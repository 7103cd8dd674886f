package fireplan

import (
	"testing"
	"time"
)

func TestFireOf(t *testing.T) {
	fires := map[int]time.Time{2: at(60)}
	for _, c := range []struct {
		name  string
		fires map[int]time.Time
		item  int
		want  time.Time
	}{
		{"no make-up fires: the fire's", nil, 2, at(120)},
		{"an item of its own fire", fires, 2, at(60)},
		{"another item: the fire's", fires, 3, at(120)},
	} {
		if got := FireOf(c.fires, at(120), c.item); !got.Equal(c.want) {
			t.Errorf("%s: FireOf = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestEarliest(t *testing.T) {
	for _, c := range []struct {
		name  string
		fires map[int]time.Time
		items []int
		want  time.Time
	}{
		{"no items", map[int]time.Time{1: at(60)}, nil, at(120)},
		{"no item earlier", map[int]time.Time{1: at(180)}, []int{0, 1}, at(120)},
		{"the earliest of two", map[int]time.Time{1: at(60), 2: at(0)}, []int{1, 2, 3}, at(0)},
		{"an item not run here does not count", map[int]time.Time{1: at(60), 2: at(0)}, []int{1, 3}, at(60)},
	} {
		if got := Earliest(c.fires, at(120), c.items); !got.Equal(c.want) {
			t.Errorf("%s: Earliest = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestMayHaveRunThrough(t *testing.T) {
	may := map[int]time.Time{1: at(120), 2: at(30)}
	for _, c := range []struct {
		name          string
		item          int
		from, through time.Time
		want          time.Time
	}{
		{"an item its owner did not run", 3, at(0), at(300), time.Time{}},
		{"within the run's fires", 1, at(60), at(300), at(120)},
		{"bounded by the run's last fire", 1, at(60), at(90), at(90)},
		{"the run's first fire itself", 1, at(120), at(300), at(120)},
		{"before the run's first fire: none", 2, at(60), at(300), time.Time{}},
	} {
		if got := MayHaveRunThrough(may, c.item, c.from, c.through); !got.Equal(c.want) {
			t.Errorf("%s: MayHaveRunThrough = %v, want %v", c.name, got, c.want)
		}
	}
	if got := MayHaveRunThrough(nil, 1, at(0), at(300)); !got.IsZero() {
		t.Errorf("not a failover run: %v", got)
	}
}

func TestRangeMayHaveRunThrough(t *testing.T) {
	may := map[int]time.Time{1: at(120), 2: at(240), 3: at(30), 7: at(600)}
	for _, c := range []struct {
		name    string
		may     map[int]time.Time
		run     ItemRun
		through time.Time
		want    time.Time
	}{
		{"not a failover run", nil, ItemRun{First: 0, Last: 5, Fire: at(60)}, at(300), time.Time{}},
		{"the most doubtful item", may, ItemRun{First: 0, Last: 5, Fire: at(60)}, at(300), at(240)},
		{"bounded by the run's last fire", may, ItemRun{First: 1, Last: 2, Fire: at(60)}, at(180), at(180)},
		{"an item before the run's fire is not doubtful", may, ItemRun{First: 3, Last: 3, Fire: at(60)}, at(300), time.Time{}},
		{"an item outside the run does not count", may, ItemRun{First: 0, Last: 1, Fire: at(60)}, at(900), at(120)},
	} {
		if got := RangeMayHaveRunThrough(c.may, c.run, c.through); !got.Equal(c.want) {
			t.Errorf("%s: RangeMayHaveRunThrough = %v, want %v", c.name, got, c.want)
		}
	}
}
