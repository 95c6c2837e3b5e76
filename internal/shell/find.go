package shell

import (
	"slices"
	"strings"
)

// find reads its command line in its own way: options, starting points,
// then an expression of one-dash primaries, some of which take one or two
// words, and -exec style primaries that take a whole command.

// findPrimaryArgs lists the primaries that take words, with how many.
var findPrimaryArgs = map[string]int{
	"name": 1, "iname": 1, "path": 1, "ipath": 1, "wholename": 1, "iwholename": 1, "regex": 1, "iregex": 1, "regextype": 1,
	"type": 1, "xtype": 1, "user": 1, "group": 1, "uid": 1, "gid": 1, "perm": 1, "size": 1, "mtime": 1, "atime": 1,
	"ctime": 1, "mmin": 1, "amin": 1, "cmin": 1, "newer": 1, "anewer": 1, "cnewer": 1, "samefile": 1, "inum": 1,
	"links": 1, "lname": 1, "ilname": 1, "maxdepth": 1, "mindepth": 1, "fstype": 1, "used": 1, "context": 1,
	"printf": 1, "fprint": 1, "fprint0": 1, "fls": 1, "files0-from": 1, "fprintf": 2,
}

// findExecPrimaries run a command built from the words that follow.
var findExecPrimaries = []string{"-exec", "-execdir", "-ok", "-okdir"}

// FindPlaceholder is the word find replaces with each file it visits.
const FindPlaceholder = "{}"

// parseFind splits find's arguments: Operands are the starting points (the
// default "." is not added), Opts the leading options and the primaries,
// each with its first word as Value.
func parseFind(args []Word) Parsed {
	var p Parsed
	i := 0
	// Leading options: -H -L -P, -D debugopts, -Olevel.
	for i < len(args) {
		m := args[i].Match
		switch {
		case m == "-H" || m == "-L" || m == "-P":
			p.Opts = append(p.Opts, Opt{Name: m, Arg: i})
			i++
			continue
		case m == "-D" && i+1 < len(args):
			p.Opts = append(p.Opts, Opt{Name: m, Arg: i, Value: args[i+1], HasValue: true})
			i += 2
			continue
		case strings.HasPrefix(m, "-O") && len(m) > 2 && isDigits(m[2:]):
			p.Opts = append(p.Opts, Opt{Name: "-O", Arg: i, Value: sub(args[i], m[2:]), HasValue: true})
			i++
			continue
		}
		break
	}
	for i < len(args) && !findExprStart(args[i].Match) {
		p.Operands = append(p.Operands, args[i])
		i++
	}
	for i < len(args) {
		m := args[i].Match
		if !strings.HasPrefix(m, "-") || len(m) < 2 {
			i++ // ( ) ! , and stray words
			continue
		}
		o := Opt{Name: m, Arg: i}
		if slices.Contains(findExecPrimaries, m) {
			end := findExecEnd(args, i)
			if i+1 < end {
				o.Value, o.HasValue = args[i+1], true
			}
			p.Opts = append(p.Opts, o)
			i = end + 1
			continue
		}
		n := findPrimaryArgs[m[1:]]
		if strings.HasPrefix(m, "-newer") && len(m) == len("-newerXY") {
			n = 1 // -newermt DATE and the other -newerXY forms
		}
		if n > 0 && i+1 < len(args) {
			o.Value, o.HasValue = args[i+1], true
		}
		p.Opts = append(p.Opts, o)
		i += 1 + n
	}
	return p
}

// findExprStart reports a word that begins find's expression.
func findExprStart(m string) bool {
	return m == "(" || m == "!" || m == ")" || m == "," || (strings.HasPrefix(m, "-") && len(m) > 1)
}

// findExecEnd returns the index of the ";" or "+" (after "{}") that ends the
// -exec at i, or len(args) when it is unterminated.
func findExecEnd(args []Word, i int) int {
	for j := i + 1; j < len(args); j++ {
		v := args[j].Match
		if v == ";" || (v == "+" && j > i+1 && args[j-1].Match == FindPlaceholder) {
			return j
		}
	}
	return len(args)
}

// findExecs returns the command word lists of find's -exec, -execdir, -ok
// and -okdir primaries. A "{}" argument is replaced by find's starting
// points (the first files it visits are the starting points themselves),
// so that `find / -exec rm -rf {} +` is checked as `rm -rf /`; one that is
// not static is left as it is.
func findExecs(args []Word, p *Parsed) [][]Word {
	starts := p.Operands
	if len(starts) == 0 {
		starts = []Word{{Static: true, Value: ".", Match: "."}}
	}
	var out [][]Word
	for _, o := range p.Opts {
		if !slices.Contains(findExecPrimaries, o.Name) || !o.HasValue {
			continue
		}
		end := findExecEnd(args, o.Arg)
		ws := make([]Word, 0, end-o.Arg)
		for k, w := range args[o.Arg+1 : end] {
			if k > 0 && w.Static && w.Value == FindPlaceholder {
				ws = append(ws, starts...)
				continue
			}
			ws = append(ws, w)
		}
		out = append(out, ws)
	}
	return out
}
