package docsubset

import (
	"encoding/base64"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The writer: a block mapping of scalars, with mappings nested one level,
// written byte for byte as go.yaml.in/yaml/v3's Marshal writes a struct
// of strings, integers, booleans, floats and pointers to such structs
// (indentation 4, no line width). The style of a string follows the
// emitter's analysis (its emitterc.go: yaml_emitter_analyze_scalar and
// yaml_emitter_select_scalar_style), ported here.

const indentStep = 4

// Writer writes a document. Its zero value is ready to use.
type Writer struct {
	buf   []byte
	depth int
}

// Bytes returns the document written so far.
func (w *Writer) Bytes() []byte { return w.buf }

// key starts a line with key and its colon. Keys are words that read
// as strings when plain (not "n", "yes", "null", a number...).
func (w *Writer) key(key string) {
	for range w.depth * indentStep {
		w.buf = append(w.buf, ' ')
	}
	w.buf = append(w.buf, key...)
	w.buf = append(w.buf, ':')
}

// Map starts a nested mapping under key: the keys written until End are
// its own.
func (w *Writer) Map(key string) {
	w.key(key)
	w.buf = append(w.buf, '\n')
	w.depth++
}

// End ends the mapping Map started.
func (w *Writer) End() { w.depth-- }

// Int writes key with an integer value.
func (w *Writer) Int(key string, v int) { w.plain(key, strconv.Itoa(v)) }

// Bool writes key with a boolean value.
func (w *Writer) Bool(key string, v bool) { w.plain(key, strconv.FormatBool(v)) }

// Float writes key with a float value.
func (w *Writer) Float(key string, v float64) {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	switch s {
	case "+Inf":
		s = ".inf"
	case "-Inf":
		s = "-.inf"
	case "NaN":
		s = ".nan"
	}
	w.plain(key, s)
}

func (w *Writer) plain(key, s string) {
	w.key(key)
	w.buf = append(w.buf, ' ')
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\n')
}

type scalarStyle int

const (
	plainStyle scalarStyle = iota
	singleQuoted
	doubleQuoted
	literalStyle
)

// String writes key with a string value, in the style Marshal picks.
func (w *Writer) String(key, s string) {
	w.key(key)
	tagged := false
	if !utf8.ValidString(s) {
		// Marshal writes such text as base64, tagged !!binary.
		tagged = true
		s = encodeBase64(s)
		w.buf = append(w.buf, " !!binary"...)
	}
	style := plainStyle
	switch {
	case strings.Contains(s, "\n"):
		style = literalStyle
	case tagged:
	case resolve(s) != "!!str" || isBase60Float(s) || isOldBool(s):
		style = doubleQuoted
	}
	a := analyze([]byte(s))
	if style == plainStyle && !a.blockPlainAllowed {
		style = singleQuoted
	}
	if style == singleQuoted && !a.singleQuotedAllowed {
		style = doubleQuoted
	}
	if style == literalStyle && !a.blockAllowed {
		style = doubleQuoted
	}
	e := emitter{buf: w.buf, indent: (w.depth + 1) * indentStep, column: len(key) + 1 + w.depth*indentStep}
	if tagged {
		e.column += len(" !!binary")
	}
	v := []byte(s)
	switch style {
	case plainStyle:
		if len(v) > 0 {
			e.put(' ')
		}
		e.writeAll(v)
	case singleQuoted:
		e.writeSingle(v)
	case doubleQuoted:
		e.writeDouble(v)
	case literalStyle:
		e.writeLiteral(v)
	}
	w.buf = e.buf
	if !e.indention || e.column > 0 || !e.whitespace {
		// A literal ending with a line break has ended its line.
		w.buf = append(w.buf, '\n')
	}
}

// encodeBase64 is Marshal's base64 of text that is not UTF-8: lines of 70
// characters, each ended by a line break when there are several.
func encodeBase64(s string) string {
	const lineLen = 70
	enc := base64.StdEncoding.EncodeToString([]byte(s))
	lines := len(enc)/lineLen + 1
	var b strings.Builder
	for i := 0; i < len(enc); i += lineLen {
		b.WriteString(enc[i:min(i+lineLen, len(enc))])
		if lines > 1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// StringIfSet writes key with s, unless s is "" (a key left out when
// unset, as Marshal's omitempty leaves it out).
func (w *Writer) StringIfSet(key, s string) {
	if s != "" {
		w.String(key, s)
	}
}

// analysis is what a string allows (yaml_emitter_analyze_scalar).
type analysis struct {
	blockPlainAllowed, singleQuotedAllowed, blockAllowed bool
}

func analyze(v []byte) analysis {
	if len(v) == 0 {
		return analysis{blockPlainAllowed: true, singleQuotedAllowed: true}
	}
	var blockIndicators, lineBreaks, special, tabs bool
	var leadingSpace, leadingBreak, trailingSpace, trailingBreak, breakSpace, spaceBreak bool
	var previousSpace, previousBreak bool
	if len(v) >= 3 && (string(v[:3]) == "---" || string(v[:3]) == "...") {
		blockIndicators = true
	}
	precededByWhitespace := true
	for i, w := 0, 0; i < len(v); i += w {
		w = width(v[i])
		followedByWhitespace := i+w >= len(v) || v[i+w] == ' ' || v[i+w] == '\t'
		if i == 0 {
			switch v[i] {
			case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
				blockIndicators = true
			case '?', ':', '-':
				if followedByWhitespace {
					blockIndicators = true
				}
			}
		} else {
			switch v[i] {
			case ':':
				if followedByWhitespace {
					blockIndicators = true
				}
			case '#':
				if precededByWhitespace {
					blockIndicators = true
				}
			}
		}
		if v[i] == '\t' {
			tabs = true
		} else if !isPrintable(v, i) {
			special = true
		}
		switch {
		case v[i] == ' ':
			if i == 0 {
				leadingSpace = true
			}
			if i+w == len(v) {
				trailingSpace = true
			}
			if previousBreak {
				breakSpace = true
			}
			previousSpace, previousBreak = true, false
		case isBreak(v, i):
			lineBreaks = true
			if i == 0 {
				leadingBreak = true
			}
			if i+w == len(v) {
				trailingBreak = true
			}
			if previousSpace {
				spaceBreak = true
			}
			previousSpace, previousBreak = false, true
		default:
			previousSpace, previousBreak = false, false
		}
		precededByWhitespace = isBlankz(v, i)
	}
	a := analysis{blockPlainAllowed: true, singleQuotedAllowed: true, blockAllowed: true}
	if leadingSpace || leadingBreak || trailingSpace || trailingBreak || lineBreaks || blockIndicators {
		a.blockPlainAllowed = false
	}
	if trailingSpace {
		a.blockAllowed = false
	}
	if breakSpace || spaceBreak || tabs || special {
		a.blockPlainAllowed, a.singleQuotedAllowed = false, false
	}
	if spaceBreak || special {
		a.blockAllowed = false
	}
	return a
}

// width is the length of the UTF-8 sequence starting with b.
func width(b byte) int {
	switch {
	case b&0x80 == 0x00:
		return 1
	case b&0xE0 == 0xC0:
		return 2
	case b&0xF0 == 0xE0:
		return 3
	case b&0xF8 == 0xF0:
		return 4
	}
	return 0
}

// at is b[i], 0 past its end.
func at(b []byte, i int) byte {
	if i < len(b) {
		return b[i]
	}
	return 0
}

func isPrintable(b []byte, i int) bool {
	c, c1, c2 := b[i], at(b, i+1), at(b, i+2)
	return c == 0x0A || c >= 0x20 && c <= 0x7E ||
		c == 0xC2 && c1 >= 0xA0 || c > 0xC2 && c < 0xED || c == 0xED && c1 < 0xA0 || c == 0xEE ||
		c == 0xEF && !(c1 == 0xBB && c2 == 0xBF) && !(c1 == 0xBF && (c2 == 0xBE || c2 == 0xBF))
}

func isBreak(b []byte, i int) bool {
	c, c1, c2 := b[i], at(b, i+1), at(b, i+2)
	return c == '\r' || c == '\n' || c == 0xC2 && c1 == 0x85 || c == 0xE2 && c1 == 0x80 && (c2 == 0xA8 || c2 == 0xA9)
}

func isBlankz(b []byte, i int) bool {
	return b[i] == ' ' || b[i] == '\t' || b[i] == 0 || isBreak(b, i)
}

// emitter writes one scalar as a mapping's value, tracking the column
// and the state the emitter's writers keep.
type emitter struct {
	buf        []byte
	indent     int
	column     int
	whitespace bool
	indention  bool
}

func (e *emitter) put(c byte) {
	e.buf = append(e.buf, c)
	e.column++
}

func (e *emitter) putBreak() {
	e.buf = append(e.buf, '\n')
	e.column = 0
	e.indention = true
}

func (e *emitter) write(v []byte, i *int) {
	w := width(v[*i])
	e.buf = append(e.buf, v[*i:*i+w]...)
	e.column++
	*i += w
}

func (e *emitter) writeAll(v []byte) {
	for i := 0; i < len(v); {
		e.write(v, &i)
	}
}

func (e *emitter) writeBreak(v []byte, i *int) {
	if v[*i] == '\n' {
		e.putBreak()
		*i++
		return
	}
	e.write(v, i)
	e.column = 0
	e.indention = true
}

func (e *emitter) writeIndent() {
	if !e.indention || e.column > e.indent || (e.column == e.indent && !e.whitespace) {
		e.putBreak()
	}
	for e.column < e.indent {
		e.put(' ')
	}
	e.whitespace = true
}

func (e *emitter) indicator(s string, needWhitespace bool) {
	if needWhitespace && !e.whitespace {
		e.put(' ')
	}
	e.writeAll([]byte(s))
	e.whitespace = false
	e.indention = false
}

func (e *emitter) writeSingle(v []byte) {
	e.indicator("'", true)
	breaks := false
	for i := 0; i < len(v); {
		switch {
		case v[i] == ' ':
			e.write(v, &i)
		case isBreak(v, i):
			if !breaks && v[i] == '\n' {
				e.putBreak()
			}
			e.writeBreak(v, &i)
			breaks = true
		default:
			if breaks {
				e.writeIndent()
			}
			if v[i] == '\'' {
				e.put('\'')
			}
			e.write(v, &i)
			e.indention = false
			breaks = false
		}
	}
	e.indicator("'", false)
}

func (e *emitter) writeDouble(v []byte) {
	e.indicator(`"`, true)
	bom := len(v) >= 3 && v[0] == 0xEF && v[1] == 0xBB && v[2] == 0xBF
	for i := 0; i < len(v); {
		if !isPrintable(v, i) || bom || isBreak(v, i) || v[i] == '"' || v[i] == '\\' {
			r, w := utf8.DecodeRune(v[i:])
			i += w
			e.put('\\')
			switch r {
			case 0x00:
				e.put('0')
			case 0x07:
				e.put('a')
			case 0x08:
				e.put('b')
			case 0x09:
				e.put('t')
			case 0x0A:
				e.put('n')
			case 0x0b:
				e.put('v')
			case 0x0c:
				e.put('f')
			case 0x0d:
				e.put('r')
			case 0x1b:
				e.put('e')
			case 0x22:
				e.put('"')
			case 0x5c:
				e.put('\\')
			case 0x85:
				e.put('N')
			case 0xA0:
				e.put('_')
			case 0x2028:
				e.put('L')
			case 0x2029:
				e.put('P')
			default:
				digits := 8
				switch {
				case r <= 0xFF:
					e.put('x')
					digits = 2
				case r <= 0xFFFF:
					e.put('u')
					digits = 4
				default:
					e.put('U')
				}
				for k := (digits - 1) * 4; k >= 0; k -= 4 {
					e.put("0123456789ABCDEF"[(r>>uint(k))&0x0F])
				}
			}
			continue
		}
		e.write(v, &i)
	}
	e.indicator(`"`, false)
}

func (e *emitter) writeLiteral(v []byte) {
	e.indicator("|", true)
	if v[0] == ' ' || isBreak(v, 0) {
		e.indicator(strconv.Itoa(indentStep), false)
	}
	// The chomping indicator: '-' without a final break, '+' with more
	// than one, none with exactly one.
	i := len(v) - 1
	for v[i]&0xC0 == 0x80 {
		i--
	}
	switch {
	case !isBreak(v, i):
		e.indicator("-", false)
	case i == 0:
		e.indicator("+", false)
	default:
		i--
		for v[i]&0xC0 == 0x80 {
			i--
		}
		if isBreak(v, i) {
			e.indicator("+", false)
		}
	}
	e.putBreak()
	e.whitespace = true
	breaks := true
	for i := 0; i < len(v); {
		if isBreak(v, i) {
			e.writeBreak(v, &i)
			breaks = true
			continue
		}
		if breaks {
			e.writeIndent()
		}
		e.write(v, &i)
		e.indention = false
		breaks = false
	}
}
