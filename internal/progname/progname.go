// Package progname names this program in the commands IronVise tells its
// user to run next ("verify: ironvise verify-session ID", "see 'ironvise
// sessions'", "Run 'ironvise --help' for usage.").
//
// Those hints are meant to be pasted as they are, so they name the binary
// the user actually ran: straight after `make build` that is
// ./bin/ironvise, and a hint saying `ironvise` would then fail with
// "command not found" or, worse, run an older installed ironvise against
// the same data directory. The word "ironvise" is kept when it already
// resolves to this executable.
//
// The thin exec path (internal/execclient) prints hints too, from a point
// before the rest of the binary is initialised; it may depend only on
// packages Go initialises first, so this one imports os and runtime alone
// (not strings or path/filepath, which Go initialises after the heavy
// packages) and does its few string operations by hand.
package progname

import (
	"os"
	"runtime"
)

// Default is the program's name on PATH, the word every hint is written
// with.
const Default = "ironvise"

// Name returns how a hint names this program, given args[0] as the user's
// shell passed it (invoked) and the PATH the shell searched (pathList):
// invoked itself when it is a bare name (the shell found it on PATH), the
// plain name when invoked is a path to the same file as the ironvise on
// PATH, else the path, quoted for a POSIX shell when it needs it.
func Name(invoked, pathList string) string {
	if invoked == "" {
		return Default
	}
	if !hasSeparator(invoked) {
		return invoked
	}
	if onPath := lookPath(Default, pathList); onPath != "" && sameFile(onPath, invoked) {
		return Default
	}
	return shellQuote(invoked)
}

// Rewrite makes the hints in msg name prog. Packages write a hint quoted,
// as 'ironvise …' or `ironvise …`; only that form is rewritten, so
// "ironvise" in any other sense is left alone.
func Rewrite(msg, prog string) string {
	if prog == Default {
		return msg
	}
	const word = Default + " "
	var out []byte
	last := 0
	for i := 0; i < len(msg); i++ {
		if (msg[i] == '\'' || msg[i] == '`') && len(msg)-i-1 >= len(word) && msg[i+1:i+1+len(word)] == word {
			out = append(append(append(out, msg[last:i+1]...), prog...), ' ')
			last = i + 1 + len(word)
			i = last - 1
		}
	}
	if out == nil {
		return msg
	}
	return string(append(out, msg[last:]...))
}

// lookPath returns the file name runs as, searched in pathList, or "".
func lookPath(name, pathList string) string {
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	start := 0
	for i := 0; i <= len(pathList); i++ {
		if i < len(pathList) && pathList[i] != os.PathListSeparator {
			continue
		}
		dir := pathList[start:i]
		start = i + 1
		if !isAbs(dir) {
			// A relative entry (or an empty one, the current directory)
			// depends on where the hint is pasted; a hint does not rely
			// on it.
			continue
		}
		f := dir + string(os.PathSeparator) + name
		st, err := os.Stat(f)
		if err == nil && st.Mode().IsRegular() && (runtime.GOOS == "windows" || st.Mode()&0o111 != 0) {
			return f
		}
	}
	return ""
}

// sameFile reports whether a and b name the same file (through symbolic
// and hard links alike).
func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// hasSeparator reports whether s is a path rather than a bare name.
func hasSeparator(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' || s[i] == os.PathSeparator {
			return true
		}
	}
	return false
}

// isAbs reports whether dir is absolute: it starts at the root, or on
// Windows at a drive's root (C:\).
func isAbs(dir string) bool {
	if runtime.GOOS == "windows" {
		return len(dir) >= 3 && dir[1] == ':' && (dir[2] == '\\' || dir[2] == '/')
	}
	return dir != "" && dir[0] == '/'
}

// shellQuote returns s as one word of a POSIX shell: unchanged when it
// has only characters no shell treats specially, else in single quotes,
// inside which only a quote needs care: it is written as quote, backslash,
// quote, quote (end the quoting, a literal quote, start it again).
func shellQuote(s string) string {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || isAny(c, "_@%+=:,./-")
	}
	if plain {
		return s
	}
	out := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, `'\''`...)
		} else {
			out = append(out, s[i])
		}
	}
	return string(append(out, '\''))
}

// isAny reports whether c is one of the bytes of set.
func isAny(c byte, set string) bool {
	for i := 0; i < len(set); i++ {
		if set[i] == c {
			return true
		}
	}
	return false
}
