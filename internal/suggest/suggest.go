// Package suggest finds the key a user probably meant ("did you mean"),
// for the YAML readers' unknown-key errors and the operator's unknown
// commands and job names.
package suggest

import "strings"

// Nearest returns the known key equal to key but for case, else the
// one within edit distance 2 of it (ignoring case), else "".
func Nearest(key string, known []string) string {
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return k
		}
	}
	best, bestDist := "", 3
	for _, k := range known {
		if d := EditDistance(strings.ToLower(key), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// EditDistance is the Levenshtein distance between a and b, in runes.
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
