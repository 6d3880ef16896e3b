package jaas

import "unicode/utf8"

// tokenKind is what StreamTokenizer.ttype holds.
type tokenKind int

const (
	tokEOF    tokenKind = iota
	tokWord             // TT_WORD: sval set
	tokNumber           // TT_NUMBER: no sval
	tokQuoted           // a quoted string: sval set
	tokChar             // an ordinary character, in char
)

type token struct {
	kind tokenKind
	text string // words and quoted strings
	char rune   // ordinary characters
}

// tokenizer is java.io.StreamTokenizer configured as JaasConfig does.
type tokenizer struct {
	in  []rune
	pos int
}

func newTokenizer(s string) *tokenizer { return &tokenizer{in: []rune(s)} }

func (t *tokenizer) peek() (rune, bool) {
	if t.pos >= len(t.in) {
		return 0, false
	}
	return t.in[t.pos], true
}

func isWhitespace(c rune) bool { return c >= 0 && c <= ' ' }

func isAlpha(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0xA0 && c <= 0xFF || c > 0xFF ||
		c == '-' || c == '_' || c == '$'
}

func isDigit(c rune) bool { return c >= '0' && c <= '9' || c == '.' || c == '-' }

func (t *tokenizer) next() token {
	for {
		c, ok := t.peek()
		if !ok {
			return token{kind: tokEOF}
		}
		switch {
		case isWhitespace(c):
			t.pos++
		case c == '/':
			if !t.skipComment() {
				return token{kind: tokEOF}
			}
		case isDigit(c):
			// '-' is both a letter and a digit here: StreamTokenizer checks
			// digits first, so '-' alone is an ordinary character.
			return t.number()
		case isAlpha(c):
			return t.word()
		case c == '"' || c == '\'':
			return t.quoted(c)
		default:
			t.pos++
			return token{kind: tokChar, char: c}
		}
	}
}

// skipComment skips a comment starting at '/'; false at end of input.
func (t *tokenizer) skipComment() bool {
	t.pos++
	c, ok := t.peek()
	if ok && c == '*' {
		t.pos++
		for t.pos+1 < len(t.in) && !(t.in[t.pos] == '*' && t.in[t.pos+1] == '/') {
			t.pos++
		}
		if t.pos+1 >= len(t.in) {
			t.pos = len(t.in)
			return false
		}
		t.pos += 2
		return true
	}
	// "//" and a lone '/' (the comment character) both end at the line end.
	for t.pos < len(t.in) && t.in[t.pos] != '\n' && t.in[t.pos] != '\r' {
		t.pos++
	}
	return true
}

func (t *tokenizer) number() token {
	if t.in[t.pos] == '-' {
		t.pos++
		if c, ok := t.peek(); !ok || c != '.' && (c < '0' || c > '9') {
			return token{kind: tokChar, char: '-'}
		}
	}
	seenDot := false
	for t.pos < len(t.in) {
		c := t.in[t.pos]
		if c == '.' && !seenDot {
			seenDot = true
		} else if c < '0' || c > '9' {
			break
		}
		t.pos++
	}
	return token{kind: tokNumber}
}

func (t *tokenizer) word() token {
	start := t.pos
	for t.pos < len(t.in) && (isAlpha(t.in[t.pos]) || isDigit(t.in[t.pos])) {
		t.pos++
	}
	return token{kind: tokWord, text: string(t.in[start:t.pos])}
}

func (t *tokenizer) quoted(quote rune) token {
	t.pos++
	var out []rune
	for t.pos < len(t.in) {
		c := t.in[t.pos]
		if c == quote {
			t.pos++
			break
		}
		if c == '\n' || c == '\r' {
			break // the line break is read again as whitespace
		}
		t.pos++
		if c == '\\' {
			c = t.escape()
		}
		out = append(out, c)
	}
	return token{kind: tokQuoted, text: string(out)}
}

// escape reads what follows a backslash inside a quoted string.
func (t *tokenizer) escape() rune {
	c, ok := t.peek()
	if !ok {
		return utf8.RuneError // Java stores (char)-1 here; nothing sensible to keep
	}
	t.pos++
	if c >= '0' && c <= '7' {
		return t.octal(c)
	}
	switch c {
	case 'a':
		return 0x7
	case 'b':
		return '\b'
	case 'f':
		return 0xC
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'v':
		return 0xB
	}
	return c
}

// octal reads \o, \oo or \ooo (three digits only when the first is 0-3).
func (t *tokenizer) octal(first rune) rune {
	v := first - '0'
	if c, ok := t.peek(); ok && c >= '0' && c <= '7' {
		t.pos++
		v = v<<3 + (c - '0')
		if c2, ok := t.peek(); ok && c2 >= '0' && c2 <= '7' && first <= '3' {
			t.pos++
			v = v<<3 + (c2 - '0')
		}
	}
	return v
}
