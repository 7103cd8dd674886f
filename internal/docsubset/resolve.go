package docsubset

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The tags a plain scalar resolves to, as go.yaml.in/yaml/v3 resolves
// them (its resolve.go): the writer quotes a string that would read back
// as something else, and the reader tags what it reads.

var resolveMap = map[string]string{
	"true": "!!bool", "True": "!!bool", "TRUE": "!!bool",
	"false": "!!bool", "False": "!!bool", "FALSE": "!!bool",
	"": "!!null", "~": "!!null", "null": "!!null", "Null": "!!null", "NULL": "!!null",
	".nan": "!!float", ".NaN": "!!float", ".NAN": "!!float",
	".inf": "!!float", ".Inf": "!!float", ".INF": "!!float",
	"+.inf": "!!float", "+.Inf": "!!float", "+.INF": "!!float",
	"-.inf": "!!float", "-.Inf": "!!float", "-.INF": "!!float",
	"<<": "!!merge",
}

var yamlStyleFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// resolveHint is the class of a plain scalar's first byte: 'S' sign,
// 'D' digit, 'M' in resolveMap only, '.' float, 0 always a string.
func resolveHint(c byte) byte {
	switch {
	case c == '+' || c == '-':
		return 'S'
	case '0' <= c && c <= '9':
		return 'D'
	case c == '.':
		return '.'
	case strings.IndexByte("yYnNtTfFoO~", c) >= 0:
		return 'M'
	}
	return 0
}

// resolve returns the tag of plain scalar in.
func resolve(in string) string {
	hint := byte('N')
	if in != "" {
		hint = resolveHint(in[0])
	}
	if hint == 0 {
		return "!!str"
	}
	if tag, ok := resolveMap[in]; ok {
		return tag
	}
	switch hint {
	case '.':
		if _, err := strconv.ParseFloat(in, 64); err == nil {
			return "!!float"
		}
	case 'D', 'S':
		if _, ok := parseTimestamp(in); ok {
			return "!!timestamp"
		}
		if _, ok := resolveInt(in); ok {
			return "!!int"
		}
		plain := strings.ReplaceAll(in, "_", "")
		if yamlStyleFloat.MatchString(plain) {
			if _, err := strconv.ParseFloat(plain, 64); err == nil {
				return "!!float"
			}
		}
	}
	return "!!str"
}

// resolveInt returns the value of a plain scalar resolved as an integer:
// an int64, or a uint64 beyond it.
func resolveInt(in string) (any, bool) {
	plain := strings.ReplaceAll(in, "_", "")
	if v, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return v, true
	}
	if v, err := strconv.ParseUint(plain, 0, 64); err == nil {
		return v, true
	}
	if yamlStyleFloat.MatchString(plain) {
		if _, err := strconv.ParseFloat(plain, 64); err == nil {
			return nil, false
		}
	}
	for _, p := range []struct {
		prefix string
		base   int
	}{{"0b", 2}, {"0o", 8}} {
		if strings.HasPrefix(plain, p.prefix) {
			if v, err := strconv.ParseInt(plain[2:], p.base, 64); err == nil {
				return v, true
			}
			if v, err := strconv.ParseUint(plain[2:], p.base, 64); err == nil {
				return v, true
			}
		} else if strings.HasPrefix(plain, "-"+p.prefix) {
			if v, err := strconv.ParseInt("-"+plain[3:], p.base, 64); err == nil {
				return v, true
			}
		}
	}
	return nil, false
}

// Int returns the value of an "!!int" scalar as an int: ok is false when
// it does not fit.
func Int(n *Node) (int, bool) {
	v, _ := resolveInt(n.Value)
	if i, ok := v.(int64); ok && int64(int(i)) == i {
		return int(i), true
	}
	return 0, false
}

// Float returns the value of an "!!int" or "!!float" scalar.
func Float(n *Node) (float64, bool) {
	if n.Tag == "!!int" {
		switch v, _ := resolveInt(n.Value); v := v.(type) {
		case int64:
			return float64(v), true
		case uint64:
			return float64(v), true
		}
		return 0, false
	}
	switch n.Value {
	case ".nan", ".NaN", ".NAN":
		return math.NaN(), true
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		return math.Inf(1), true
	case "-.inf", "-.Inf", "-.INF":
		return math.Inf(-1), true
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
	if n.Value != "" && n.Value[0] == '.' {
		f, err = strconv.ParseFloat(n.Value, 64)
	}
	return f, err == nil
}

var allowedTimestampFormats = []string{
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2t15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999",
	"2006-1-2",
}

// parseTimestamp reports whether s reads as a YAML timestamp.
func parseTimestamp(s string) (time.Time, bool) {
	i := 0
	for ; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			break
		}
	}
	if i != 4 || i == len(s) || s[i] != '-' {
		return time.Time{}, false
	}
	for _, format := range allowedTimestampFormats {
		if t, err := time.Parse(format, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// isBase60Float reports whether s is a YAML 1.1 sexagesimal number, which
// the writer quotes.
func isBase60Float(s string) bool {
	if s == "" {
		return false
	}
	c := s[0]
	if !(c == '+' || c == '-' || c >= '0' && c <= '9') || strings.IndexByte(s, ':') < 0 {
		return false
	}
	return base60float.MatchString(s)
}

var base60float = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`)

// isOldBool reports whether s is a YAML 1.1 boolean, which the writer
// quotes.
func isOldBool(s string) bool {
	switch s {
	case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON",
		"n", "N", "no", "No", "NO", "off", "Off", "OFF":
		return true
	}
	return false
}
