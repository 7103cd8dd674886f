package configcheck

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/shardjob/shardjob/internal/docsubset"
)

// ItemParameters parses "0=a,1=b" into item -> parameter. When total is
// positive the items must lie in [0,total); when it is 0 the range is not
// checked; when it is negative every item is out of range. It returns
// every problem found, and no map with them.
func ItemParameters(s string, total int) (map[int]string, []string) {
	params := map[int]string{}
	if s == "" {
		return params, nil
	}
	var problems []string
	for i, entry := range strings.Split(s, ",") {
		key, value, ok := strings.Cut(entry, "=")
		key = strings.TrimSpace(key)
		switch {
		case strings.TrimSpace(entry) == "":
			problems = append(problems, fmt.Sprintf("entry %d is empty", i+1))
			continue
		case !ok:
			problems = append(problems, fmt.Sprintf("entry %s has no '=' (want item=value)", docsubset.QuoteShort(entry)))
			continue
		case key == "" || strings.Trim(key, "0123456789") != "":
			problems = append(problems, fmt.Sprintf("entry %s: item %s is not a non-negative integer",
				docsubset.QuoteShort(entry), docsubset.QuoteShort(key)))
			continue
		}
		item, err := strconv.Atoi(key)
		if err != nil || (total != 0 && item >= total) {
			entry, key := docsubset.QuoteShort(entry), docsubset.CutShort(key)
			if total > 0 {
				problems = append(problems, fmt.Sprintf("entry %s: item %s is outside [0,%d) given by shardingTotalCount", entry, key, total))
			} else {
				problems = append(problems, fmt.Sprintf("entry %s: item %s is outside [0,shardingTotalCount)", entry, key))
			}
			continue
		}
		if _, dup := params[item]; dup {
			problems = append(problems, fmt.Sprintf("item %d is given more than once", item))
			continue
		}
		params[item] = value
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return params, nil
}
