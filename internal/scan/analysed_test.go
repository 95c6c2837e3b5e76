package scan

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"os"
	"reflect"
	"strconv"
	"testing"
)

const analysedFile = "analysed_patterns.go"

var updatePatterns = flag.Bool("update-patterns", false, "rewrite "+analysedFile+" from the built-in lists")

// TestAnalysedPatternsMatchLists: analysed_patterns.go, which the
// scanner's built-in lists start from so that no process parses their
// regexps before its first scan, holds exactly what parsing the lists
// derives. After changing a built-in pattern, run
// `go test ./internal/scan -run TestAnalysedPatternsMatchLists -update-patterns`.
func TestAnalysedPatternsMatchLists(t *testing.T) {
	defs := builtinPatterns()
	parsed, _, err := compilePatterns(defs, nil)
	if err != nil {
		t.Fatal(err)
	}
	src, err := generateAnalysed(parsed)
	if err != nil {
		t.Fatal(err)
	}
	if *updatePatterns {
		if err := os.WriteFile(analysedFile, src, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(analysedFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, src) {
		t.Fatalf("%s is not what the built-in lists parse to; regenerate it with -update-patterns", analysedFile)
	}
	// And the lists a scanner builds from the file are those it would
	// build by parsing.
	fromFile, _, err := compilePatterns(defs, analysedPatterns)
	if err != nil {
		t.Fatal(err)
	}
	again, err := generateAnalysed(fromFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, src) {
		t.Fatal("the lists built from the generated analysis differ from the parsed ones")
	}
	// Field by field, including any the generator does not write.
	for i := range parsed {
		if !reflect.DeepEqual(parsed[i].variants, fromFile[i].variants) {
			t.Fatalf("pattern %s: the variants built from the file differ from the parsed ones:\n%+v\n%+v", parsed[i].label, fromFile[i].variants, parsed[i].variants)
		}
	}
}

// TestStaleAnalysisIsParsed: a pattern whose source is not the one the
// generated analysis was made from is parsed, so a stale file costs time,
// never a wrong variant.
func TestStaleAnalysisIsParsed(t *testing.T) {
	defs := builtinPatterns()[:1]
	want, _, err := compilePatterns(defs, nil)
	if err != nil {
		t.Fatal(err)
	}
	stale := []analysedPattern{{src: "not " + defs[0].re, variants: []variant{{expr: "stale", prefix: "stale"}}}}
	got, _, err := compilePatterns(defs, stale)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got[0].variants, want[0].variants) {
		t.Fatalf("a stale analysis was used: %+v", got[0].variants)
	}
}

// generateAnalysed writes the analysis of pats as the Go source of
// analysed_patterns.go.
func generateAnalysed(pats []pattern) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated from the built-in lists by TestAnalysedPatternsMatchLists -update-patterns. DO NOT EDIT.\n\n")
	b.WriteString("package scan\n\n")
	b.WriteString("// analysedPatterns are the analyses of builtinPatterns, by index.\n")
	b.WriteString("var analysedPatterns = []analysedPattern{\n")
	for _, p := range pats {
		fmt.Fprintf(&b, "{src: %s", strconv.Quote(p.src))
		if p.variants != nil {
			b.WriteString(", variants: []variant{\n")
			for _, w := range p.variants {
				writeVariant(&b, w)
			}
			b.WriteString("}")
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}

// writeVariant writes the fields of w that analysis derives; those a
// scanner fills in (prefixB, prefixHint, the regexps) are left out.
func writeVariant(b *bytes.Buffer, w variant) {
	fmt.Fprintf(b, "{expr: %s, prefix: %s, anchor: %d", strconv.Quote(w.expr), strconv.Quote(w.prefix), w.anchor)
	if w.complete {
		b.WriteString(", complete: true")
	}
	if w.follow != nil {
		b.WriteString(", follow: &")
		writeByteSet(b, w.follow)
	}
	if w.lits != nil {
		b.WriteString(", lits: []reqLit{")
		for _, l := range w.lits {
			fmt.Fprintf(b, "{b: []byte(%s), newlines: %d}, ", strconv.Quote(string(l.b)), l.newlines)
		}
		b.WriteString("}")
	}
	fmt.Fprintf(b, ", budget: %d", w.budget)
	if w.noSpace {
		b.WriteString(", noSpace: true")
	}
	if w.bounds != nil {
		b.WriteString(", bounds: []repeatBound{")
		for _, r := range w.bounds {
			fmt.Fprintf(b, "{%d, %d}, ", r.min, r.max)
		}
		b.WriteString("}")
	}
	if w.relaxed != "" {
		fmt.Fprintf(b, ", relaxed: %s", strconv.Quote(w.relaxed))
	}
	if r := w.run; r != nil {
		b.WriteString(", run: &runSkip{class: ")
		writeByteSet(b, &r.class)
		fmt.Fprintf(b, ", min: %d, offset: %d, expr: %s, budget: %d}", r.min, r.offset, strconv.Quote(r.expr), r.budget)
	}
	for _, f := range []struct {
		name string
		on   bool
	}{{"wordStart", w.wordStart}, {"lineStart", w.lineStart}, {"indent", w.indent}} {
		if f.on {
			fmt.Fprintf(b, ", %s: true", f.name)
		}
	}
	b.WriteString("},\n")
}

// writeByteSet writes set as a [256]bool literal of its members.
func writeByteSet(b *bytes.Buffer, set *[256]bool) {
	b.WriteString("[256]bool{")
	for c, in := range set {
		if in {
			fmt.Fprintf(b, "%d: true, ", c)
		}
	}
	b.WriteString("}")
}
