package docsubset

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits bound a document.
type Limits struct {
	// Bytes is the largest document, in bytes.
	Bytes int
	// Depth is how deeply a document may nest, counting each mapping and
	// list as one level.
	Depth int
}

// Parse reads one document within lim and returns its root node, or nil
// when the document is empty or null. YAML beyond the subset (see the
// package's doc) is refused with an Error of kind Invalid naming the line
// and what is not supported; nesting deeper than lim.Depth with one of
// kind TooComplex. The work is abandoned when ctx ends.
func Parse(ctx context.Context, data []byte, lim Limits) (*Node, *Error) {
	if len(data) > lim.Bytes {
		return nil, &Error{Kind: TooLarge, Subject: fmt.Sprintf("document is %s bytes", GroupDigits(len(data))),
			Detail: fmt.Sprintf("%s bytes over the limit of %s", GroupDigits(len(data)-lim.Bytes), GroupDigits(lim.Bytes))}
	}
	p := &parser{ctx: ctx, maxDepth: lim.Depth}
	if err := p.split(data); err != nil {
		return nil, err
	}
	if err := p.markers(); err != nil {
		return nil, err
	}
	p.skip()
	if p.i >= len(p.lines) {
		return nil, nil
	}
	root, err := p.node(-1, 0)
	if err != nil {
		return nil, err
	}
	p.skip()
	if p.i < len(p.lines) {
		return nil, p.errorf(p.i, "did not expect this line here (its indentation does not match the lines before it)")
	}
	if IsNull(root) {
		return nil, nil
	}
	return root, nil
}

type parser struct {
	ctx      context.Context
	maxDepth int
	lines    []string
	// finalBreak: the document's last line ends with a line break.
	finalBreak bool
	i          int // the next line
}

// unsupported is a problem at line i (from 0) with YAML beyond the subset.
func (p *parser) unsupported(i int, what string) *Error {
	return &Error{Subject: "invalid YAML", Line: i + 1, Detail: what + " is not supported in a config document"}
}

func (p *parser) errorf(i int, format string, args ...any) *Error {
	return &Error{Subject: "invalid YAML", Line: i + 1, Detail: fmt.Sprintf(format, args...)}
}

// split checks the characters of data and cuts it into lines.
func (p *parser) split(data []byte) *Error {
	line := 0
	for i := 0; i < len(data); {
		c := data[i]
		if c == '\n' {
			line++
			i++
			continue
		}
		r, w := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && w <= 1:
			return p.errorf(line, "the document is not UTF-8")
		case r == '\r' || r == 0x85 || r == 0x2028 || r == 0x2029:
			return p.unsupported(line, "a line break other than \\n")
		case r == 0xFEFF:
			return p.unsupported(line, "a byte order mark")
		case r != '\t' && !isPrintable(data, i):
			return p.errorf(line, "control character %U is not allowed", r)
		}
		i += w
	}
	p.finalBreak = len(data) > 0 && data[len(data)-1] == '\n'
	p.lines = strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	return nil
}

// markers takes the document's "---" start and "..." end, refusing
// directives and more than one document.
func (p *parser) markers() *Error {
	started, ended := false, -1
	seen := false // content seen
	for i, l := range p.lines {
		switch {
		case strings.HasPrefix(l, "%"):
			return p.unsupported(i, "a directive")
		case isMarker(l, "---"):
			if seen || started || ended >= 0 {
				return p.unsupported(i, "more than one document")
			}
			if rest := strings.TrimLeft(l[3:], " \t"); rest != "" && rest[0] != '#' {
				return p.unsupported(i, `content on the "---" line`)
			}
			started = true
			p.lines[i] = ""
		case isMarker(l, "..."):
			if rest := strings.TrimLeft(l[3:], " \t"); rest != "" && rest[0] != '#' {
				return p.unsupported(i, `content on the "..." line`)
			}
			if !seen && !started {
				return p.errorf(i, `"..." ends a document that has not started`)
			}
			if ended < 0 {
				ended = i
			}
			p.lines[i] = ""
		case !blank(l):
			if ended >= 0 {
				return p.unsupported(i, "more than one document")
			}
			seen = true
		}
	}
	return nil
}

func isMarker(l, m string) bool {
	return strings.HasPrefix(l, m) && (len(l) == 3 || l[3] == ' ' || l[3] == '\t')
}

// blank reports whether l holds nothing but spaces and a comment (a tab
// before them is refused by indentOf, as yaml/v3 refuses it).
func blank(l string) bool {
	t := strings.TrimLeft(l, " ")
	return t == "" || t[0] == '#'
}

// skip moves past blank lines.
func (p *parser) skip() {
	for p.i < len(p.lines) && blank(p.lines[p.i]) {
		p.i++
	}
}

// indentOf returns the spaces before line i's content, refusing tabs
// among them.
func (p *parser) indentOf(i int) (int, *Error) {
	l := p.lines[i]
	n := len(l) - len(strings.TrimLeft(l, " "))
	if n < len(l) && l[n] == '\t' {
		return 0, p.unsupported(i, "a tab as indentation")
	}
	return n, nil
}

// node reads the node starting at the next line, more indented than
// parent (or, for a list, as indented), at depth.
func (p *parser) node(parent, depth int) (*Node, *Error) {
	if depth >= p.maxDepth {
		return nil, &Error{Kind: TooComplex, Line: p.i + 1, Subject: fmt.Sprintf("document nests deeper than %d levels", p.maxDepth)}
	}
	if p.i%256 == 0 && p.ctx != nil {
		if err := p.ctx.Err(); err != nil {
			return nil, &Error{Subject: "document", Detail: "decoding abandoned: " + err.Error(), Cause: err}
		}
	}
	ind, err := p.indentOf(p.i)
	if err != nil {
		return nil, err
	}
	rest := p.lines[p.i][ind:]
	if isEntry(rest) {
		return p.sequence(ind, depth)
	}
	if _, _, ok := splitKey(rest); ok {
		return p.mapping(ind, depth)
	}
	// A scalar on a line of its own: the document's root.
	i := p.i
	n, err := p.scalar(i, rest, ind)
	if err != nil {
		return nil, err
	}
	if p.i == i {
		p.i++
	}
	return n, nil
}

// isEntry reports whether a line's content starts a list item.
func isEntry(s string) bool {
	return s == "-" || strings.HasPrefix(s, "- ") || strings.HasPrefix(s, "-\t")
}

// splitKey cuts "key: value" at its colon.
func splitKey(s string) (key, rest string, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '#' && i > 0 && (s[i-1] == ' ' || s[i-1] == '\t') {
			return "", "", false
		}
		if s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ') {
			return strings.TrimRight(s[:i], " \t"), s[i+1:], true
		}
	}
	return "", "", false
}

func (p *parser) mapping(ind, depth int) (*Node, *Error) {
	m := &Node{Kind: MappingNode, Line: p.i + 1}
	for {
		p.skip()
		if p.i >= len(p.lines) {
			return m, nil
		}
		n, err := p.indentOf(p.i)
		if err != nil {
			return nil, err
		}
		if n < ind {
			return m, nil
		}
		if n > ind {
			return nil, p.errorf(p.i, "did not expect more indentation here")
		}
		i := p.i
		key, rest, ok := splitKey(p.lines[i][ind:])
		if !ok {
			if isEntry(p.lines[i][ind:]) {
				return nil, p.errorf(i, "a list item where a key was expected")
			}
			return nil, p.errorf(i, `expected "key: value"`)
		}
		if line := p.lines[i][ind:]; tooLongKey(line[:len(line)-len(rest)-1]) {
			return nil, p.errorf(i, "a key longer than %d characters: YAML allows no longer key", maxKeyChars)
		}
		k, err := p.key(i, key)
		if err != nil {
			return nil, err
		}
		v, err := p.value(i, rest, ind, depth, true)
		if err != nil {
			return nil, err
		}
		m.Content = append(m.Content, k, v)
	}
}

// maxKeyChars bounds a key, from its first character to its colon: YAML
// allows no longer implicit key (yaml/v3 refuses one).
const maxKeyChars = 1024

// tooLongKey reports whether s, a key and the blanks before its colon, is
// longer than maxKeyChars characters.
func tooLongKey(s string) bool {
	return len(s) > maxKeyChars && utf8.RuneCountInString(s) > maxKeyChars
}

// key reads a mapping's key: a plain scalar.
func (p *parser) key(i int, key string) (*Node, *Error) {
	switch {
	case key == "":
		return nil, p.unsupported(i, "an empty key")
	case strings.ContainsAny(key[:1], "#,[]{}&*!|>'\"%@`?:-"):
		if key[0] != '-' || len(key) == 1 {
			return nil, p.unsupported(i, fmt.Sprintf("a key starting with %q", key[:1]))
		}
	}
	if strings.Contains(key, ":\t") || strings.HasSuffix(key, ":") {
		return nil, p.errorf(i, "a key may not hold \": \"")
	}
	tag := resolve(key)
	if key == "<<" {
		return nil, p.unsupported(i, "a merge key (<<)")
	}
	return &Node{Kind: ScalarNode, Tag: tag, Value: key, Line: i + 1}, nil
}

// value reads the value of line i's key, rest being what follows its
// colon; a mapping's value may be a list as indented as its key.
func (p *parser) value(i int, rest string, ind, depth int, inMapping bool) (*Node, *Error) {
	t := strings.TrimLeft(rest, " ")
	if t != "" && t[0] == '\t' {
		return nil, p.unsupported(i, "a tab after \":\" or \"-\"")
	}
	if t != "" && t[0] != '#' {
		if (t[0] == '[' || t[0] == '{') && depth+1 >= p.maxDepth {
			return nil, &Error{Kind: TooComplex, Line: i + 1, Subject: fmt.Sprintf("document nests deeper than %d levels", p.maxDepth)}
		}
		p.i = i + 1
		n, err := p.scalar(i, t, ind)
		if err != nil {
			return nil, err
		}
		p.skip()
		if p.i < len(p.lines) {
			if next, err := p.indentOf(p.i); err == nil && next > ind {
				return nil, p.unsupported(p.i, "a value continued on the next line, or a mapping under a value")
			}
		}
		return n, nil
	}
	p.i = i + 1
	p.skip()
	if p.i < len(p.lines) {
		next, err := p.indentOf(p.i)
		if err != nil {
			return nil, err
		}
		if next > ind || inMapping && next == ind && isEntry(p.lines[p.i][next:]) {
			return p.node(ind, depth+1)
		}
	}
	return &Node{Kind: ScalarNode, Tag: "!!null", Line: i + 1}, nil
}

func (p *parser) sequence(ind, depth int) (*Node, *Error) {
	s := &Node{Kind: SequenceNode, Line: p.i + 1}
	for {
		p.skip()
		if p.i >= len(p.lines) {
			return s, nil
		}
		n, err := p.indentOf(p.i)
		if err != nil {
			return nil, err
		}
		if n < ind || n == ind && !isEntry(p.lines[p.i][n:]) {
			return s, nil
		}
		if n > ind {
			return nil, p.errorf(p.i, "did not expect more indentation here")
		}
		i := p.i
		rest := strings.TrimLeft(p.lines[i][ind+1:], " ")
		if isEntry(rest) {
			return nil, p.unsupported(i, "a list in a list")
		}
		if _, _, ok := splitKey(rest); ok {
			return nil, p.unsupported(i, "a mapping in a list")
		}
		v, err := p.value(i, rest, ind, depth, false)
		if err != nil {
			return nil, err
		}
		s.Content = append(s.Content, v)
	}
}

// scalar reads the scalar s starting on line i, in a node indented ind;
// a literal block scalar takes the lines after it.
func (p *parser) scalar(i int, s string, ind int) (*Node, *Error) {
	n := &Node{Kind: ScalarNode, Tag: "!!str", Line: i + 1}
	if strings.HasPrefix(s, "!!binary ") || strings.HasPrefix(s, "!!binary\t") {
		inner := strings.TrimLeft(s[len("!!binary"):], " \t")
		if inner == "" || strings.ContainsRune("#!&*", rune(inner[0])) {
			return nil, p.unsupported(i, "a !!binary tag without its text on its line")
		}
		v, err := p.scalar(i, inner, ind)
		if err != nil {
			return nil, err
		}
		if _, err := base64.StdEncoding.DecodeString(v.Value); err != nil || v.Tag == "!!null" {
			return nil, p.errorf(i, "!!binary value is not base64")
		}
		v.Tag = "!!binary"
		return v, nil
	}
	switch s[0] {
	case '\'':
		v, end := unquoteSingle(s)
		if end < 0 {
			return nil, p.unsupported(i, "a quoted value over several lines")
		}
		n.Value = v
		return n, p.trailing(i, s[end+1:])
	case '"':
		v, end, err := unescape(s)
		if err != "" {
			return nil, p.errorf(i, "%s", err)
		}
		if end < 0 {
			return nil, p.unsupported(i, "a quoted value over several lines")
		}
		n.Value = v
		return n, p.trailing(i, s[end+1:])
	case '|':
		return p.literal(i, s, ind)
	case '>':
		return nil, p.unsupported(i, "a folded block value (>)")
	case '&':
		return nil, p.unsupported(i, "an anchor (&)")
	case '*':
		return nil, p.unsupported(i, "an alias (*)")
	case '!':
		return nil, p.unsupported(i, "a tag (!)")
	case '[', '{':
		return p.flow(i, s)
	case '%', '@', '`', ']', '}', ',':
		return nil, p.errorf(i, "a plain value may not start with %q", s[:1])
	case '?', ':', '-':
		if len(s) == 1 || s[1] == ' ' || s[1] == '\t' {
			return nil, p.unsupported(i, fmt.Sprintf("%q here", s[:1]))
		}
	}
	// A plain scalar: to a comment or the end of the line.
	v := s
	for j := 1; j < len(s); j++ {
		if s[j] == '#' && (s[j-1] == ' ' || s[j-1] == '\t') {
			v = s[:j]
			break
		}
	}
	v = strings.TrimRight(v, " \t")
	if strings.Contains(v, ": ") || strings.Contains(v, ":\t") || strings.HasSuffix(v, ":") {
		return nil, p.errorf(i, "a plain value may not hold \": \" (quote it)")
	}
	n.Value = v
	n.Tag = resolve(v)
	if v == "<<" {
		n.Tag = "!!merge" // as yaml/v3 tags it
	}
	return n, nil
}

// flow reads a flow collection written on line i, s starting with its
// opening bracket: a list of scalars ([a, "b"]) or a mapping of plain keys
// to scalars ({k: v, k2: 'v'}), on one line, as an operator writes a short
// list or policy. A collection inside it, one over several lines, a
// comment inside it or an item that is empty is refused.
func (p *parser) flow(i int, s string) (*Node, *Error) {
	open, closing := s[0], byte(']')
	n := &Node{Kind: SequenceNode, Line: i + 1}
	if open == '{' {
		n.Kind, closing = MappingNode, '}'
	}
	overLines := func() *Error {
		return p.unsupported(i, "a flow collection ("+string(open)+") over several lines")
	}
	j := 1
	for {
		j = skipBlanks(s, j)
		if j >= len(s) {
			return nil, overLines()
		}
		if s[j] == closing {
			j++
			break
		}
		if n.Kind == MappingNode {
			k, next, err := p.flowScalar(i, s, j, closing, true)
			if err != nil {
				return nil, err
			}
			key, err := p.key(i, k.Value)
			if err != nil {
				return nil, err
			}
			start := j
			j = skipBlanks(s, next)
			if j >= len(s) || s[j] != ':' {
				return nil, p.errorf(i, "expected \":\" after the key %q in a flow mapping", k.Value)
			}
			if tooLongKey(s[start:j]) {
				return nil, p.errorf(i, "a key longer than %d characters: YAML allows no longer key", maxKeyChars)
			}
			v, next, err := p.flowScalar(i, s, skipBlanks(s, j+1), closing, false)
			if err != nil {
				return nil, err
			}
			n.Content, j = append(n.Content, key, v), next
		} else {
			v, next, err := p.flowScalar(i, s, j, closing, false)
			if err != nil {
				return nil, err
			}
			n.Content, j = append(n.Content, v), next
		}
		j = skipBlanks(s, j)
		switch {
		case j >= len(s):
			return nil, overLines()
		case s[j] == ',':
			j++
		case s[j] == closing:
			j++
			return n, p.trailing(i, s[j:])
		default:
			return nil, p.errorf(i, "expected \",\" or %q in a flow collection", closing)
		}
	}
	return n, p.trailing(i, s[j:])
}

// flowScalar reads the scalar at s[j:] inside a flow collection closed by
// closing, a mapping's key when key is set, and returns it with the index
// after it.
func (p *parser) flowScalar(i int, s string, j int, closing byte, key bool) (*Node, int, *Error) {
	if j >= len(s) {
		return nil, 0, p.unsupported(i, "a flow collection over several lines")
	}
	n := &Node{Kind: ScalarNode, Tag: "!!str", Line: i + 1}
	switch c := s[j]; c {
	case '[', '{':
		return nil, 0, p.unsupported(i, "a flow collection ("+string(c)+") inside a flow collection")
	case ',', ']', '}', ':':
		return nil, 0, p.unsupported(i, "an empty item in a flow collection")
	case '#':
		return nil, 0, p.unsupported(i, "a comment inside a flow collection")
	case '&', '*', '!', '|', '>', '%', '@', '`', '?':
		return nil, 0, p.unsupported(i, fmt.Sprintf("%q in a flow collection", c))
	case '\'', '"':
		var v string
		var end int
		if c == '\'' {
			v, end = unquoteSingle(s[j:])
		} else {
			var err string
			if v, end, err = unescape(s[j:]); err != "" {
				return nil, 0, p.errorf(i, "%s", err)
			}
		}
		if end < 0 {
			return nil, 0, p.unsupported(i, "a quoted value over several lines")
		}
		if key {
			return nil, 0, p.unsupported(i, "a quoted key")
		}
		n.Value = v
		return n, j + end + 1, nil
	}
	// A plain scalar: to a comma, a bracket, or a colon before a blank.
	k := j
	for ; k < len(s); k++ {
		c := s[k]
		if c == ',' || c == '[' || c == ']' || c == '{' || c == '}' {
			break
		}
		if c == '#' && (s[k-1] == ' ' || s[k-1] == '\t') {
			return nil, 0, p.unsupported(i, "a comment inside a flow collection")
		}
		if c == '?' { // yaml/v3 ends a flow scalar there, and refuses the rest
			return nil, 0, p.unsupported(i, "\"?\" in a flow collection")
		}
		if c == ':' && (k+1 == len(s) || strings.IndexByte(" \t,[]{}", s[k+1]) >= 0) {
			if key {
				break
			}
			return nil, 0, p.unsupported(i, "a mapping inside a flow collection, or a plain value holding \": \" (quote it)")
		}
	}
	if k < len(s) && (s[k] == '[' || s[k] == '{') {
		return nil, 0, p.unsupported(i, "a flow collection ("+s[k:k+1]+") inside a flow collection")
	}
	v := strings.TrimRight(s[j:k], " \t")
	if v == "" {
		return nil, 0, p.unsupported(i, "an empty item in a flow collection")
	}
	n.Value, n.Tag = v, resolve(v)
	if v == "<<" {
		return nil, 0, p.unsupported(i, "a merge key (<<)")
	}
	return n, k, nil
}

// skipBlanks returns the index of the first character of s at or after j
// that is not a space or a tab.
func skipBlanks(s string, j int) int {
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	return j
}

// trailing checks what follows a quoted scalar on its line: blanks and a
// comment.
func (p *parser) trailing(i int, rest string) *Error {
	t := strings.TrimLeft(rest, " \t")
	if t == "" || t[0] == '#' && len(t) < len(rest) {
		return nil
	}
	return p.errorf(i, "unexpected %s after a quoted value", QuoteShort(t))
}

// literal reads a literal block scalar whose header is s on line i, in a
// node indented ind.
func (p *parser) literal(i int, s string, ind int) (*Node, *Error) {
	n := &Node{Kind: ScalarNode, Tag: "!!str", Line: i + 1}
	h := s[1:]
	chomp, explicit := byte(0), 0
	for k := 0; k < 2 && h != ""; k++ {
		switch c := h[0]; {
		case (c == '-' || c == '+') && chomp == 0:
			chomp = c
		case '1' <= c && c <= '9' && explicit == 0:
			explicit = int(c - '0')
		default:
			k = 2
			continue
		}
		h = h[1:]
	}
	if t := strings.TrimLeft(h, " \t"); t != "" && (t[0] != '#' || len(t) == len(h)) {
		return nil, p.errorf(i, "unexpected %s after |", QuoteShort(t))
	}
	parent := max(ind, 0)
	// The content's indentation: explicit, or that of its first line that
	// is not empty.
	j := i + 1
	contentInd := -1
	if explicit > 0 {
		contentInd = parent + explicit
	} else {
		maxEmpty := 0
		for k := j; k < len(p.lines); k++ {
			l := p.lines[k]
			sp := len(l) - len(strings.TrimLeft(l, " "))
			if sp == len(l) {
				maxEmpty = max(maxEmpty, sp)
				continue
			}
			if l[sp] == '\t' {
				return nil, p.unsupported(k, "a tab before a block value's indentation")
			}
			contentInd = sp
			break
		}
		if contentInd <= parent {
			contentInd = -1 // no content
		} else if maxEmpty > contentInd {
			return nil, p.unsupported(i, "a block value whose leading empty lines are more indented than its text")
		}
	}
	var lines []string
	for ; j < len(p.lines); j++ {
		l := p.lines[j]
		sp := len(l) - len(strings.TrimLeft(l, " "))
		if sp < len(l) && l[sp] == '\t' && (contentInd < 0 || sp < contentInd) {
			return nil, p.unsupported(j, "a tab before a block value's indentation")
		}
		if sp == len(l) || contentInd >= 0 && sp >= contentInd {
			if contentInd >= 0 && len(l) > contentInd {
				lines = append(lines, l[contentInd:])
			} else if sp == len(l) {
				lines = append(lines, "")
			}
			continue
		}
		if contentInd < 0 || sp < contentInd {
			break
		}
	}
	// Trailing empty lines belong to the chomping, not the text.
	last := len(lines)
	for last > 0 && lines[last-1] == "" {
		last--
	}
	v := strings.Join(lines[:last], "\n")
	breaks := len(lines) - last // after the text: its own, and the empty lines'
	if last > 0 {
		breaks++
	}
	if j == len(p.lines) && !p.finalBreak && len(lines) > 0 {
		breaks-- // the document's last line has none
	}
	switch {
	case chomp == '+':
		v += strings.Repeat("\n", max(breaks, 0))
	case chomp == 0 && last > 0 && breaks > 0:
		v += "\n"
	}
	p.i = j
	n.Value = v
	return n, nil
}

// unquoteSingle reads the single-quoted scalar at the start of s
// (” is a quote), returning its value and the index of its closing quote
// (-1 when the line has none).
func unquoteSingle(s string) (string, int) {
	var b strings.Builder
	for j := 1; j < len(s); j++ {
		if s[j] != '\'' {
			b.WriteByte(s[j])
			continue
		}
		if j+1 < len(s) && s[j+1] == '\'' {
			b.WriteByte('\'')
			j++
			continue
		}
		return b.String(), j
	}
	return "", -1
}

// unescape reads the double-quoted scalar at the start of s, returning
// its value and the index of its closing quote (-1 when the line has
// none), or a problem.
func unescape(s string) (string, int, string) {
	var b strings.Builder
	for j := 1; j < len(s); j++ {
		c := s[j]
		if c == '"' {
			return b.String(), j, ""
		}
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		j++
		if j >= len(s) {
			return "", -1, ""
		}
		hex := 0
		switch s[j] {
		case '0':
			b.WriteByte(0)
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 't', '\t':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'v':
			b.WriteByte('\v')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case 'e':
			b.WriteByte(0x1b)
		case ' ':
			b.WriteByte(' ')
		case '"':
			b.WriteByte('"')
		case '/':
			b.WriteByte('/')
		case '\\':
			b.WriteByte('\\')
		case 'N':
			b.WriteRune(0x85)
		case '_':
			b.WriteRune(0xA0)
		case 'L':
			b.WriteRune(0x2028)
		case 'P':
			b.WriteRune(0x2029)
		case 'x':
			hex = 2
		case 'u':
			hex = 4
		case 'U':
			hex = 8
		default:
			return "", 0, fmt.Sprintf("unknown escape \\%c in a double-quoted value", s[j])
		}
		if hex > 0 {
			if j+hex >= len(s) {
				return "", 0, "short escape in a double-quoted value"
			}
			v, err := strconv.ParseUint(s[j+1:j+1+hex], 16, 32)
			if err != nil || (v >= 0xD800 && v <= 0xDFFF) || v > 0x10FFFF {
				return "", 0, "bad escape in a double-quoted value"
			}
			b.WriteRune(rune(v))
			j += hex
		}
	}
	return "", -1, ""
}
