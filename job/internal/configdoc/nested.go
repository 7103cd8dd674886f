package configdoc

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shardjob/shardjob/internal/docsubset"
	"github.com/shardjob/shardjob/internal/suggest"
)

// Retry is the retry mapping's values, field for field job.RetryPolicy.
type Retry struct {
	Attempts   int
	Backoff    time.Duration
	MaxBackoff time.Duration
	Jitter     float64
}

// RetryKeys are the keys of the retry mapping.
var RetryKeys = []string{"attempts", "backoff", "maxBackoff", "jitter"}

// DecodeRetry decodes the retry mapping, as strictly as the document's
// own keys: an unknown key wraps unknownKey (job.ErrUnknownKey).
func DecodeRetry(n *docsubset.Node, unknownKey error) (Retry, error) {
	var p Retry
	if n == nil || n.Kind != docsubset.MappingNode {
		return p, fmt.Errorf("must be a mapping such as {attempts: 3, backoff: 1s}, got %s", docsubset.KindName(n))
	}
	pairs, perrs := docsubset.Pairs(n)
	if len(perrs) > 0 {
		return p, perrs[0]
	}
	var problems []string
	var unknown error
	for _, kv := range pairs {
		var err error
		switch kv.Key {
		case "attempts":
			err = Int(kv.Value, &p.Attempts)
		case "backoff":
			err = Duration(kv.Value, &p.Backoff)
		case "maxBackoff":
			err = Duration(kv.Value, &p.MaxBackoff)
		case "jitter":
			err = Fraction(kv.Value, &p.Jitter)
		default:
			msg := "unknown key " + docsubset.QuoteShort(kv.Key)
			if s := suggest.Nearest(kv.Key, RetryKeys); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			unknown = unknownKey
			problems = append(problems, fmt.Sprintf("%s at line %d; the keys are %s", msg, kv.KeyNode.Line, strings.Join(RetryKeys, ", ")))
			continue
		}
		if err != nil {
			problems = append(problems, kv.Key+": "+err.Error())
		}
	}
	if len(problems) > 0 {
		if unknown != nil {
			return Retry{}, fmt.Errorf("%w: %s", unknown, strings.Join(problems, "; "))
		}
		return Retry{}, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return p, nil
}

// Alert is the alert mapping's values, field for field job.AlertPolicy.
type Alert struct {
	Late      time.Duration
	NotRunFor time.Duration
}

// DecodeAlert decodes alert: {late: 30s, notRunFor: 2h}; no value is the
// zero Alert, and unknown keys are errors, as the document's own are.
func DecodeAlert(n *docsubset.Node) (Alert, error) {
	var p Alert
	if docsubset.IsNull(n) {
		return p, nil
	}
	if n.Kind != docsubset.MappingNode {
		return p, fmt.Errorf("must be a mapping with late and notRunFor, got %s", docsubset.KindName(n))
	}
	pairs, perrs := docsubset.Pairs(n)
	if len(perrs) > 0 {
		return p, perrs[0]
	}
	var errs []string
	for _, kv := range pairs {
		var err error
		switch kv.Key {
		case "late":
			err = Duration(kv.Value, &p.Late)
		case "notRunFor":
			err = Duration(kv.Value, &p.NotRunFor)
		default:
			err = fmt.Errorf("unknown key (want late or notRunFor)")
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s (line %d): %v", docsubset.QuoteShort(kv.Key), kv.KeyNode.Line, err))
		}
	}
	if len(errs) > 0 {
		return Alert{}, errors.New(strings.Join(errs, "; "))
	}
	return p, nil
}

// PlainName reports whether the writer writes name as it is: it starts
// with an ASCII letter, has only letters, digits, '.', '_' and '-', and is
// no word that YAML reads as a boolean or null.
func PlainName(name string) bool {
	if name == "" || !('a' <= name[0] && name[0] <= 'z' || 'A' <= name[0] && name[0] <= 'Z') {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch b := name[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', b == '.', b == '_', b == '-':
		default:
			return false
		}
	}
	switch strings.ToLower(name) {
	case "y", "yes", "n", "no", "true", "false", "on", "off", "null":
		return false
	}
	return true
}
