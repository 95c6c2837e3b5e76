package overlay

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkComputeLargeWorkspace: a step touching a few files of a
// 20,000-file workspace reads only what it touched.
func BenchmarkComputeLargeWorkspace(b *testing.B) {
	ws := filepath.Join(b.TempDir(), "ws")
	for d := 0; d < 200; d++ {
		dir := filepath.Join(ws, fmt.Sprintf("pkg%03d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := 0; f < 100; f++ {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.go", f)), []byte(strings.Repeat("package x\n", 50)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	up := filepath.Join(b.TempDir(), "upper")
	for i := 0; i < 10; i++ {
		p := filepath.Join(up, fmt.Sprintf("pkg%03d", i*7), "f001.go")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat("package y\n", 50)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cs, err := Compute(ws, nil, up, DefaultLimits())
		if err != nil || len(cs.Changes) != 10 {
			b.Fatalf("%v %d", err, len(cs.Changes))
		}
	}
}

// BenchmarkUnified1MiB diffs two 1 MiB texts that differ in every
// tenth line (past maxEdits: the bounded fallback).
func BenchmarkUnified1MiB(b *testing.B) {
	var x, y strings.Builder
	for i := 0; x.Len() < 1<<20; i++ {
		fmt.Fprintf(&x, "line %d of the file\n", i)
		if i%10 == 0 {
			fmt.Fprintf(&y, "LINE %d changed\n", i)
		} else {
			fmt.Fprintf(&y, "line %d of the file\n", i)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Unified("a", "b", x.String(), y.String(), 64<<10)
	}
}

// BenchmarkUnifiedFewEdits: 1 MiB with 500 scattered edits (Myers).
func BenchmarkUnifiedFewEdits(b *testing.B) {
	var x, y strings.Builder
	for i := 0; x.Len() < 1<<20; i++ {
		fmt.Fprintf(&x, "line %d of the file\n", i)
		if i%100 == 0 {
			fmt.Fprintf(&y, "LINE %d changed\n", i)
		} else {
			fmt.Fprintf(&y, "line %d of the file\n", i)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Unified("a", "b", x.String(), y.String(), 64<<10)
	}
}
