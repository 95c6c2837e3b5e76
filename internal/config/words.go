package config

import (
	"errors"
	"fmt"
	"strings"
)

// SplitWords splits s into words the way a POSIX shell splits a simple
// command line, without running anything: blanks separate words; '...'
// keeps everything literally; "..." keeps everything but \" \\ \$ \` as
// escapes; a backslash outside quotes escapes the next character. Anything
// a shell would expand or interpret — $, backquotes, ; | & < > ( ), a
// leading ~ or # — is an error rather than a literal, so a value can never
// mean something else to a reader than to IronVise.
func SplitWords(s string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				switch s[j] {
				case '\\':
					if j+1 < len(s) && strings.IndexByte("\"\\$`", s[j+1]) >= 0 {
						j++
					}
				case '$', '`':
					return nil, fmt.Errorf("expansion %q inside double quotes is not supported", s[j])
				}
				cur.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, errors.New("unterminated double quote")
			}
			i = j
			inWord = true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("trailing backslash")
			}
			i++
			if s[i] != '\n' { // backslash-newline is a line continuation
				cur.WriteByte(s[i])
				inWord = true
			}
		case strings.IndexByte("$`;|&<>()", c) >= 0:
			return nil, fmt.Errorf("shell syntax %q is not supported (quote it to pass it literally)", c)
		case (c == '~' || c == '#') && !inWord:
			return nil, fmt.Errorf("a word starting with %q is not supported (quote it to pass it literally)", c)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
