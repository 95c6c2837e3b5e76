package shell

import (
	"slices"
	"strings"
)

// This file is the one option model that every option rule uses: the
// tripwire's banned_arg_rules, the policy's command rules and the wrappers
// the analysis looks through. A rule never matches option text with a
// regex of its own: `curl -d@/etc/shadow`, `curl -Ff=@x`, `nc -e/bin/sh`,
// `rm -vr`, `sort --compress-prog=sh` and `tar -I prog` all name their
// option here, once.

// OptSpec says how one program reads its command line. The zero value is
// the generic model used for programs without a spec: every word starting
// with "-" is an option, a short cluster is a run of flags, `--name=value`
// carries its value, and options may follow operands (GNU permutation).
type OptSpec struct {
	// ShortValue lists the one-letter options that take a value, attached
	// (-ofile) or as the next word (-o file).
	ShortValue string
	// ShortOptional lists the one-letter options whose value is optional
	// and can only be attached (-O[pager], -i[suffix]).
	ShortOptional string
	// ShortFlags lists the one-letter options without a value. Only Strict
	// specs need it.
	ShortFlags string
	// LongValue lists the long options (without "--") that take a value,
	// after "=" or as the next word.
	LongValue []string
	// LongOptional lists the long options whose value is optional and can
	// only follow "=".
	LongOptional []string
	// LongFlags lists the long options without a value. Listing them lets
	// an abbreviation resolve (GNU getopt_long accepts any unambiguous
	// prefix: `--compress-prog` is --compress-program).
	LongFlags []string
	// Abbrev reports that unique prefixes of long options are accepted.
	Abbrev bool
	// InOrder reports that options end at the first operand (a "+"
	// getopt string): everything after it belongs to the command a
	// wrapper runs, or to a subcommand.
	InOrder bool
	// OneDashLong reports that long options are also written with one
	// dash (-name, -exec) and that no short clusters exist.
	OneDashLong bool
	// NumericFlag reports that -NUMBER is one option (nice -5, kill -9,
	// head -20), not a cluster.
	NumericFlag bool
	// OldStyle reports that a first word without a dash is a cluster of
	// option letters whose values are the following words in order
	// (tar czf out.tgz src).
	OldStyle bool
	// Strict reports that every option of the program is listed: an
	// unknown option makes the parse Unknown, because its value, if it
	// takes one, could be mistaken for the program a wrapper runs.
	Strict bool
}

// genericSpec is the model of programs without a spec.
var genericSpec OptSpec

// Opt is one option of a command line.
type Opt struct {
	// Name is the option as the program reads it: "-d" or "--data". A
	// unique abbreviation of a long option is expanded to its full name.
	Name string
	// Value is the option's value when HasValue: the rest of a cluster,
	// the text after "=", or the next word.
	Value    Word
	HasValue bool
	// Arg is the index in the argument list of the word holding the
	// option.
	Arg int
}

// Parsed is a command line split by an OptSpec.
type Parsed struct {
	Opts []Opt
	// Operands are the words that are not options or option values, in
	// order.
	Operands []Word
	// Unknown names the first option a Strict spec does not list.
	Unknown string
}

// Has reports whether one of names is among the options.
func (p Parsed) Has(names ...string) bool {
	for i := range p.Opts {
		if slices.Contains(names, p.Opts[i].Name) {
			return true
		}
	}
	return false
}

// Values returns the values of the options named, in order.
func (p Parsed) Values(names ...string) []Word {
	var out []Word
	for i := range p.Opts {
		if p.Opts[i].HasValue && slices.Contains(names, p.Opts[i].Name) {
			out = append(out, p.Opts[i].Value)
		}
	}
	return out
}

// First returns the first operand, or a zero Word and false.
func (p Parsed) First() (Word, bool) {
	if len(p.Operands) == 0 {
		return Word{}, false
	}
	return p.Operands[0], true
}

// ParseArgs splits args with spec; a nil spec is the generic model.
func ParseArgs(args []Word, spec *OptSpec) Parsed {
	if spec == nil {
		spec = &genericSpec
	}
	var p Parsed
	dashes := 0
	for k := range args {
		if strings.HasPrefix(args[k].Match, "-") {
			dashes++
		}
	}
	if dashes == 0 && !spec.OldStyle {
		// No option at all (most commands): the words are the operands,
		// shared rather than copied because the checks run on every step.
		p.Operands = args
		return p
	}
	// One allocation for the options (a cluster may hold more options
	// than words); the operands are usually the words' tail, shared.
	p.Opts = make([]Opt, 0, 2*dashes+1)
	var buf [16]int
	ops := spec.split(&p, args, buf[:0])
	p.Operands = operandWords(args, ops)
	return p
}

// split fills p.Opts and returns the indices of the operands.
func (spec *OptSpec) split(p *Parsed, args []Word, ops []int) []int {
	i := 0
	if spec.OldStyle && len(args) > 0 && args[0].Static && args[0].Value != "" && !strings.HasPrefix(args[0].Value, "-") {
		i = spec.oldCluster(p, args)
	}
	for i < len(args) {
		m := args[i].Match
		switch {
		case m == "--":
			ops = appendRange(ops, i+1, len(args))
			return ops
		case len(m) < 2 || m[0] != '-':
			ops = append(ops, i)
			if spec.InOrder {
				ops = appendRange(ops, i+1, len(args))
				return ops
			}
			i++
		case strings.HasPrefix(m, "--"):
			i = spec.long(p, args, i)
		case spec.OneDashLong:
			i = spec.oneDash(p, args, i)
		default:
			i = spec.short(p, args, i)
		}
	}
	return ops
}

func appendRange(ops []int, from, to int) []int {
	for k := from; k < to; k++ {
		ops = append(ops, k)
	}
	return ops
}

// operandWords returns the words at the indices ops: a subslice of args
// when they are consecutive, a copy otherwise.
func operandWords(args []Word, ops []int) []Word {
	if len(ops) == 0 {
		return nil
	}
	if ops[len(ops)-1]-ops[0] == len(ops)-1 {
		return args[ops[0] : ops[len(ops)-1]+1 : ops[len(ops)-1]+1]
	}
	out := make([]Word, len(ops))
	for k, i := range ops {
		out[k] = args[i]
	}
	return out
}

// shortNames holds "-x" for every byte x, so that splitting a cluster
// allocates no option names.
var shortNames = func() (t [256]string) {
	for i := range t {
		t[i] = string([]byte{'-', byte(i)})
	}
	return t
}()

func (p *Parsed) unknown(name string) {
	if p.Unknown == "" {
		p.Unknown = name
	}
}

// sub returns a word for part of w's match text, static when w is.
func sub(w Word, s string) Word {
	if w.Static {
		return Word{Static: true, Value: s, Match: s}
	}
	return Word{Match: s}
}

// long reads one --name[=value] word at i and returns the next index.
func (s *OptSpec) long(p *Parsed, args []Word, i int) int {
	m := args[i].Match
	name, val, hasEq := strings.Cut(m[2:], "=")
	full, kind := s.longKind(name)
	o := Opt{Name: "--" + full, Arg: i}
	switch kind {
	case kindValue:
		switch {
		case hasEq:
			o.Value, o.HasValue = sub(args[i], val), true
		case i+1 < len(args):
			o.Value, o.HasValue = args[i+1], true
			i++
		}
	case kindOptional, kindFlag:
		if hasEq {
			o.Value, o.HasValue = sub(args[i], val), true
		}
	default:
		if s.Strict {
			p.unknown("--" + name)
		}
		if hasEq {
			o.Value, o.HasValue = sub(args[i], val), true
		}
	}
	p.Opts = append(p.Opts, o)
	return i + 1
}

type optKind int

const (
	kindNone optKind = iota
	kindFlag
	kindValue
	kindOptional
)

// longKind resolves a long option name, expanding a unique abbreviation
// where the program accepts one.
func (s *OptSpec) longKind(name string) (string, optKind) {
	switch {
	case slices.Contains(s.LongValue, name):
		return name, kindValue
	case slices.Contains(s.LongOptional, name):
		return name, kindOptional
	case slices.Contains(s.LongFlags, name):
		return name, kindFlag
	}
	if !s.Abbrev || name == "" {
		return name, kindNone
	}
	full, kind, n := "", kindNone, 0
	for _, l := range []struct {
		names []string
		k     optKind
	}{{s.LongValue, kindValue}, {s.LongOptional, kindOptional}, {s.LongFlags, kindFlag}} {
		for _, c := range l.names {
			if strings.HasPrefix(c, name) {
				full, kind = c, l.k
				n++
			}
		}
	}
	if n != 1 {
		// getopt_long refuses an ambiguous prefix; the program does not
		// run, so nothing is lost by keeping the word as written.
		return name, kindNone
	}
	return full, kind
}

// short reads one -abc cluster at i and returns the next index.
func (s *OptSpec) short(p *Parsed, args []Word, i int) int {
	w := args[i]
	m := w.Match
	if s.NumericFlag && isDigits(m[1:]) {
		p.Opts = append(p.Opts, Opt{Name: m, Arg: i})
		return i + 1
	}
	for k := 1; k < len(m); k++ {
		c := m[k]
		o := Opt{Name: shortNames[c], Arg: i}
		rest := m[k+1:]
		switch {
		case strings.IndexByte(s.ShortValue, c) >= 0:
			switch {
			case rest != "":
				o.Value, o.HasValue = sub(w, rest), true
			case i+1 < len(args):
				o.Value, o.HasValue = args[i+1], true
				i++
			}
			p.Opts = append(p.Opts, o)
			return i + 1
		case strings.IndexByte(s.ShortOptional, c) >= 0:
			if rest != "" {
				o.Value, o.HasValue = sub(w, rest), true
			}
			p.Opts = append(p.Opts, o)
			return i + 1
		case s.Strict && strings.IndexByte(s.ShortFlags, c) < 0:
			p.unknown(o.Name)
		}
		p.Opts = append(p.Opts, o)
	}
	return i + 1
}

// oneDash reads one -name word of a program whose long options take one
// dash; the value, if the name is listed as taking one, is the next word.
func (s *OptSpec) oneDash(p *Parsed, args []Word, i int) int {
	m := args[i].Match
	name, val, hasEq := strings.Cut(m[1:], "=")
	o := Opt{Name: "-" + name, Arg: i}
	switch {
	case hasEq:
		o.Value, o.HasValue = sub(args[i], val), true
	case slices.Contains(s.LongValue, name) && i+1 < len(args):
		o.Value, o.HasValue = args[i+1], true
		i++
	case s.Strict && !slices.Contains(s.LongFlags, name):
		p.unknown(o.Name)
	}
	p.Opts = append(p.Opts, o)
	return i + 1
}

// oldCluster reads a dashless first word as option letters (tar czf
// out.tgz src): each letter that takes a value takes the next word.
func (s *OptSpec) oldCluster(p *Parsed, args []Word) int {
	next := 1
	for _, c := range []byte(args[0].Value) {
		o := Opt{Name: shortNames[c], Arg: 0}
		if strings.IndexByte(s.ShortValue, c) >= 0 && next < len(args) {
			o.Value, o.HasValue = args[next], true
			next++
		}
		p.Opts = append(p.Opts, o)
	}
	return next
}
