package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// sect is the section sign, kept out of this file's own comments so that the
// check does not find the fixtures' citations in its own test.
const sect = "\u00a7"

// tree writes files (slash paths → content) under a temporary root.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(real(name)))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(real(content)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// expect checks the tree of files and compares the problems found, as
// "file:line: ref", with want.
func expect(t *testing.T, files map[string]string, want []string) {
	t.Helper()
	if got := found(t, tree(t, files)); !reflect.DeepEqual(got, reals(want)) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(reals(want), "\n"))
	}
}

// found lists the problems as "file:line: ref".
func found(t *testing.T, root string) []string {
	t.Helper()
	problems, err := check(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range problems {
		out = append(out, p.file+":"+itoa(p.line)+": "+p.ref)
		if !strings.Contains(p.String(), "fix: ") {
			t.Errorf("%v: no fix in the message", p)
		}
	}
	return out
}

func itoa(n int) string { return fmt.Sprintf("%02d", n) }

// real turns the fixtures' "DOCS/" into "docs/": written in capitals, the
// fixtures' broken paths are not broken paths of this repository.
func real(s string) string { return strings.ReplaceAll(s, "DOCS/", "docs/") }

// reals is real over a list.
func reals(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = real(s)
	}
	return out
}

const designPage = `# Design

<a id="good"></a>
### Good decision

## Some Heading: ` + "`code`" + ` and [a link](x.md)

## Dup

## Dup
`

func TestGoCommentsAndStrings(t *testing.T) {
	expect(t, map[string]string{
		"DOCS/design/x.md": designPage,
		"a.go": "package a\n" + // 01
			"\n" + // 02
			"// Fine: DOCS/design/x.md#good and DOCS/design/x.md.\n" + // 03
			"// Wrong anchor: DOCS/design/x.md#bad.\n" + // 04
			"// Missing page: DOCS/missing.md.\n" + // 05
			"// Old form: (checks.md " + sect + "10.1).\n" + // 06
			"// Split: (checks.md\n" + // 07
			"// " + sect + "3) once.\n" + // 08
			"// RFC 8785 " + sect + "3.2.3 and RFC 8785\n" + // 09
			"// " + sect + "3.2.2.3 are fine.\n" + // 10
			"var s = \"checks.md " + sect + "1 in a string is not a comment\"\n" + // 11
			"var p = \"see DOCS/nope.md\" // bare " + sect + "9 step 5\n" + // 12
			"/* block: `api.md` " + sect + "7 */\n", // 13
	}, []string{
		"a.go:04: DOCS/design/x.md#bad",
		"a.go:05: DOCS/missing.md",
		"a.go:06: checks.md " + sect + "10.1",
		"a.go:07: checks.md " + sect + "3",
		"a.go:12: " + sect + "9",
		"a.go:12: DOCS/nope.md",
		"a.go:13: api.md " + sect + "7",
	})
}

func TestScripts(t *testing.T) {
	expect(t, map[string]string{
		"DOCS/design/x.md":   designPage,
		"scripts/setup.sh":   "#!/bin/sh\n# the tier (sandbox.md " + sect + "3)\n# DOCS/design/x.md#good\n",
		".ci/run":            "#!/bin/sh\n# DOCS/design/x.md#gone\n",
		"Makefile":           "# fine\n",
		"web/app.js":         "// (api.md " + sect + "9)\n",
		"web/style.css":      "/* (api.md " + sect + "9) is not a script */\n",
		"internal/x/doc.txt": "checks.md " + sect + "1 outside the checked files\n",
	}, []string{
		".ci/run:02: DOCS/design/x.md#gone",
		"scripts/setup.sh:02: sandbox.md " + sect + "3",
		"web/app.js:01: api.md " + sect + "9",
	})
}

func TestMarkdownLinks(t *testing.T) {
	expect(t, map[string]string{
		"DOCS/design/x.md": designPage,
		"DOCS/img.png":     "",
		"README.md": "# Top\n" + // 01
			"[ok](DOCS/design/x.md#good), [slug](DOCS/design/x.md#some-heading-code-and-a-link)\n" + // 02
			"[dup](DOCS/design/x.md#dup-1) [image](DOCS/img.png) [dir](DOCS/design)\n" + // 03
			"[bad](DOCS/design/x.md#nope)\n" + // 04
			"[missing](DOCS/gone.md)\n" + // 05
			"[self](#top) [self bad](#bottom)\n" + // 06
			"[ext](https://example.com/x.md#y) [mail](mailto:a@b.c)\n" + // 07
			"```\n[in a fence](nowhere.md)\n```\n" + // 08-10
			"`[inline code](nowhere.md)`\n" + // 11
			"[ref]: DOCS/design/x.md#missing-ref\n", // 12
		"DOCS/design/y.md": "[up](../../README.md#top) [sibling](x.md#dup) [wrong](../design.md)\n",
	}, []string{
		"README.md:04: DOCS/design/x.md#nope",
		"README.md:05: DOCS/gone.md",
		"README.md:06: #bottom",
		"README.md:12: DOCS/design/x.md#missing-ref",
		"DOCS/design/y.md:01: ../design.md",
	})
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"4. Reason codes": "4-reason-codes",
		"`ironvise serve`: the HTTP API, live events": "ironvise-serve-the-http-api-live-events",
		"The `.elc` audit certificate":                "the-elc-audit-certificate",
		"Rollback and forks":                          "rollback-and-forks",
		"Über snake_case [link](x.md)":                "über-snake_case-link",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}
