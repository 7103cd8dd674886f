package placement

import (
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/shardjob/shardjob/job/internal/stored"
)

// fuzzSeeds are values the scheduler stores, good and bad: what it
// writes, values cut short, of the wrong type, out of range, and the
// header shapes of the etcd center (see regcenter's fuzz targets). The
// records and marks (job/internal/stored's) are here values of the wrong
// shape.
var fuzzSeeds = []string{
	`{"server":"s1","fire":1764547200000,"kind":"scheduled","begin":1764547200001,"end":1764547200002}`,
	`{"server":"s1","fire":1764547200000,"ran":[[1764547100000,1764547200000],[5,1]],"kind":"misfire","begin":1,"end":2,"error":"x"}`,
	`{"server":"s1","fire":9223372036854775807,"since":-1,"floor":-9223372036854775808}`,
	`{"server":"s1","fire":1764547200000,"ran":[[9223372036854775807,9223372036854775807]]}`,
	`{"server":"","fire":1,"kind":"scheduled","begin":1,"session":"0x1"}`,
	`{"since":1764547200000}`,
	`{"since":0}`,
	`{"since":"soon"}`,
	`{"servers":["a","b"],"joined":[1,2],"seq":2,"jobs":{"j":[1,2]},"unplaced":{"j":1}}`,
	`{"servers":["a"],"joined":[1],"seq":1,"jobs":{"j":[9223372036854775807],"k":[9223372036854775807]}}`,
	`{"servers":["a"],"joined":[1],"seq":1,"jobs":{"j":[1]},"unplaced":{"j":9223372036854775807,"k":9223372036854775807}}`,
	`{"servers":["a","a"],"joined":[1,1],"seq":1,"jobs":{}}`,
	`{"units":{"a":1}}`,
	`{"faultTolerance":1,"alarmThreshold":0,"slots":4,"freeSlots":2,"score":50}`,
	`{"faultTolerance":0,"score":101}`,
	"\xe9\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
	"\xe8\x00\x00\x01\x9a\x00\x00\x00\x00{}",
	"null",
	"[]",
	"",
}

// fuzzKinds are the values FuzzDecode decodes.
var fuzzKinds = []string{"table", "instance"}

// FuzzDecode: the load table and an instance entry, whatever their bytes,
// decode or are refused with their sentinel, without a panic; what
// decodes makes sense (checkDecode).
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		for k := range fuzzKinds {
			f.Add(uint8(k), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		k := fuzzKinds[int(kind)%len(fuzzKinds)]
		if problem := checkDecode(k, data); problem != nil {
			t.Fatalf("%s %q: %v", k, data, problem)
		}
	})
}

// checkDecode decodes data as the scheduler reads a value of kind and
// reports a problem when the decoder's answer makes no sense: an error
// that is not the kind's sentinel, an instance entry out of range, a
// table with negative units or that does not survive its own encoding.
func checkDecode(kind string, data []byte) error {
	switch kind {
	case "instance":
		info, err := DecodeInstance(data)
		if err != nil && !errors.Is(err, stored.ErrBadValue) {
			return fmt.Errorf("error %v is not stored.ErrBadValue", err)
		}
		if err == nil && info.FaultTolerance < 1 {
			return fmt.Errorf("instance entry %+v", info)
		}
		return nil
	case "table":
		t, err := DecodeTable(data)
		if err != nil {
			if !errors.Is(err, ErrTableGarbage) {
				return fmt.Errorf("error %v is not ErrTableGarbage", err)
			}
			return nil
		}
		if t.total() < 0 || t.Unplaced() < 0 {
			return fmt.Errorf("table of %d units, %d unplaced", t.total(), t.Unplaced())
		}
		for s, n := range t.Units() {
			if n <= 0 {
				return fmt.Errorf("server %q holds %d units", s, n)
			}
		}
		again, err := DecodeTable(t.encode())
		if err != nil {
			return fmt.Errorf("the decoded table does not decode once encoded: %v", err)
		}
		if !maps.Equal(again.Units(), t.Units()) || again.total() != t.total() {
			return fmt.Errorf("the table changed through its encoding: %v, %v", t.Units(), again.Units())
		}
		return nil
	}
	return fmt.Errorf("unknown kind %q", kind)
}
