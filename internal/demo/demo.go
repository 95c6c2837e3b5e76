// Package demo holds the bundled sample workspace and the scripted run of
// `ironvise demo`: a small payments service whose configuration has real
// misconfigurations, and a mock-LLM script (agent and guard replies) that
// walks through allowed reads, a tripwire block, a path escape, a policy
// denial, an injection caught in an observation, a guard denial and
// findings with verified evidence.
//
// # Usage
//
//	dir, err := demo.WriteWorkspace(filepath.Join(dataDir, "demo-workspace"))
//	client, _ := llm.New(cfgLLM, llm.Options{BuiltinScript: demo.Script()})
//
// # Limitations
//
// The script's findings cite observation sequence numbers, so they hold for
// the exact event layout of one run of the demo; the demo test fails if
// that layout changes.
package demo

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Goal is the demo session's goal.
const Goal = "Audit the payments-api service in this workspace for security misconfigurations and report each finding with evidence."

// Policy is the shipped pack the demo enforces.
const Policy = "iso42001"

//go:embed workspace script.jsonl
var files embed.FS

// Script returns the built-in mock-LLM script (JSON lines; see package llm).
func Script() []byte {
	b, err := files.ReadFile("script.jsonl")
	if err != nil {
		// Embedded at build time; a missing file is a build defect.
		panic(fmt.Sprintf("demo: embedded script missing: %v", err))
	}
	return b
}

// WriteWorkspace (re)creates the sample workspace in dir and returns its
// absolute, symlink-resolved path.
func WriteWorkspace(dir string) (string, error) {
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("demo: reset %s: %w", dir, err)
	}
	err := fs.WalkDir(files, "workspace", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("workspace", p)
		dst := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		return "", fmt.Errorf("demo: write workspace: %w", err)
	}
	return filepath.EvalSymlinks(dir)
}
