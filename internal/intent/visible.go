package intent

import (
	"fmt"
	"unicode"

	"github.com/ironvise/ironvise/internal/verdict"
)

// VisibleLen counts the characters of s that a reader sees: letters,
// digits, punctuation and symbols. Spaces, control and format characters
// (zero-width spaces and joiners, bidi controls, the byte order mark),
// combining marks on their own, variation selectors and the other
// default-ignorable code points (the Hangul fillers, U+034F) and the blank
// braille pattern do not count, so that five zero-width spaces are not a
// five-character justification.
func VisibleLen(s string) int {
	n := 0
	for _, r := range s {
		if visible(r) {
			n++
		}
	}
	return n
}

func visible(r rune) bool {
	if !unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S) {
		return false
	}
	return r != '\u2800' && !unicode.In(r, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// TooLarge is the schema denial of an input over MaxRawBytes, the one
// limit on an intent wherever it comes from (the model's reply, stdin of
// `ironvise check`). n is the input's size, or -1 when the reader stopped
// at the limit and the size is only known to exceed it.
func TooLarge(n int) *Error {
	size := fmt.Sprintf("%d bytes", n)
	if n < 0 {
		size = fmt.Sprintf("more than %d bytes", MaxRawBytes)
	}
	return &Error{verdict.SchemaTooLarge, "$", fmt.Sprintf("the intent is %s; one intent may be at most %d bytes (64 KiB): send a single, smaller intent", size, MaxRawBytes)}
}
