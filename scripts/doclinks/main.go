// Command doclinks checks the repository's references to its own
// documentation, so that a newcomer can follow every one of them.
//
// # Usage
//
//	go run ./scripts/doclinks [ROOT]
//
// ROOT defaults to the current directory (the repository root; `make test`
// runs it there). It reports every problem as FILE:LINE: REFERENCE: PROBLEM;
// fix: WHAT TO DO, and exits 1 when there is any.
//
// # What it checks
//
//  1. Comments in Go files, and the scripts (.ci/run, Makefile, scripts/,
//     web/*.js), cite no section of the product specification that is not
//     in the repository: no file name followed by a section sign and a
//     number, and no bare section sign and number. Sections of RFCs (the
//     section sign right after "RFC 8785") are fine. The decisions live in
//     docs/design/*.md under stable anchors; cite those.
//  2. Every docs/….md or docs/….md#anchor path named in Go files (comments
//     and strings) and in the scripts exists, and so does the anchor.
//  3. Every relative link of every Markdown file ([text](path#anchor),
//     [text]: path, and #anchor within the page) points at an existing file,
//     and at an existing anchor when it is a Markdown page.
//
// An anchor exists when the page has an explicit id (<a id="x"></a>) or a
// heading whose GitHub-style slug is x.
package main

import (
	"bufio"
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

func main() {
	root := "."
	if len(os.Args) > 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./scripts/doclinks [ROOT]")
		os.Exit(2)
	}
	if len(os.Args) == 2 {
		root = os.Args[1]
	}
	problems, err := check(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "doclinks:", err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		fmt.Printf("doclinks: %d broken documentation reference(s)\n", len(problems))
		os.Exit(1)
	}
}

// problem is one broken reference.
type problem struct {
	file string
	line int
	ref  string
	what string
	fix  string
}

func (p problem) String() string {
	return fmt.Sprintf("%s:%d: %s: %s; fix: %s", p.file, p.line, p.ref, p.what, p.fix)
}

// checker holds the pages read so far, so each is parsed once.
type checker struct {
	root     string
	anchors  map[string]map[string]bool // page (slash path from root) → anchors
	problems []problem
}

// check runs every check over the tree at root and returns the problems
// sorted by file and line.
func check(root string) ([]problem, error) {
	c := &checker{root: root, anchors: map[string]map[string]bool{}}
	var goFiles, scripts, pages []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(name, ".") && name != ".ci" && name != ".github" || name == "testdata" || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(name, ".go"):
			goFiles = append(goFiles, rel)
		case strings.HasSuffix(name, ".md"):
			pages = append(pages, rel)
		case isScript(rel):
			scripts = append(scripts, rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, f := range goFiles {
		if err := c.goFile(f); err != nil {
			return nil, err
		}
	}
	for _, f := range scripts {
		if err := c.script(f); err != nil {
			return nil, err
		}
	}
	for _, f := range pages {
		if err := c.page(f); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(c.problems, func(i, j int) bool {
		a, b := c.problems[i], c.problems[j]
		if a.file != b.file {
			return a.file < b.file
		}
		return a.line < b.line
	})
	return c.problems, nil
}

// isScript reports whether rel is one of the scripts whose text is checked.
func isScript(rel string) bool {
	switch {
	case rel == ".ci/run", rel == "Makefile":
		return true
	case strings.HasPrefix(rel, "scripts/"):
		return true
	case strings.HasPrefix(rel, "web/") && strings.HasSuffix(rel, ".js"):
		return true
	}
	return false
}

var (
	// specCite is a citation of a section of a specification file: the
	// file's name (perhaps in backticks), blanks and the section sign, or
	// the name at the end of one comment line and the section sign at the
	// start of the next.
	specCite = regexp.MustCompile("([A-Za-z0-9_-]+\\.md)`?(?:[ \\t]+|[ \\t]*\\n[ \\t]*(?://|#)[ \\t]*)§")
	// bareSection is "§" and a section number.
	bareSection = regexp.MustCompile(`§ ?[0-9]+(?:\.[0-9]+)*`)
	// rfcBefore matches text that ends with an RFC number, which makes the
	// section that follows one of the RFC's.
	rfcBefore = regexp.MustCompile(`RFC[ \t]*[0-9]+[ \t]*(?:\n[ \t]*(?://|#)[ \t]*)?$`)
	// lineBreak is what separates two comments on consecutive lines.
	lineBreak = regexp.MustCompile(`^[ \t]*\n[ \t]*$`)
	// docPath is a repository documentation path as code names it.
	docPath = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./-])(docs/[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md)(#[A-Za-z0-9_-]+)?`)
)

const citeFix = "cite the decision's page and anchor, docs/design/<page>.md#<anchor> (index: docs/design/README.md), or make the comment self-contained"

// goFile checks the comments of one Go file for specification citations
// and its whole text for documentation paths.
func (c *checker) goFile(rel string) error {
	src, err := os.ReadFile(filepath.Join(c.root, rel))
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	file := fset.AddFile(rel, -1, len(src))
	var s scanner.Scanner
	// Errors are the compiler's business; the scanner goes on after them.
	s.Init(file, src, func(token.Position, string) {}, scanner.ScanComments)
	// Consecutive comment lines are joined, with the bytes between them, so
	// that a citation split over two lines is seen whole and an offset in
	// the joined text is an offset from the group's start in src.
	var group strings.Builder
	groupStart, groupEnd := -1, -1
	flush := func() {
		if groupStart >= 0 {
			c.citations(rel, src, groupStart, group.String())
		}
		group.Reset()
		groupStart, groupEnd = -1, -1
	}
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok != token.COMMENT {
			continue
		}
		off := file.Offset(pos)
		if groupStart >= 0 && !lineBreak.Match(src[groupEnd:off]) {
			flush()
		}
		if groupStart < 0 {
			groupStart = off
		} else {
			group.WriteString(string(src[groupEnd:off]))
		}
		group.WriteString(lit)
		groupEnd = off + len(lit)
	}
	flush()
	c.docPaths(rel, src)
	return nil
}

// script checks a script's text: citations and documentation paths.
func (c *checker) script(rel string) error {
	src, err := os.ReadFile(filepath.Join(c.root, rel))
	if err != nil {
		return err
	}
	c.citations(rel, src, 0, string(src))
	c.docPaths(rel, src)
	return nil
}

// citations reports the specification citations in text, which starts at
// offset base of src.
func (c *checker) citations(rel string, src []byte, base int, text string) {
	reported := map[int]bool{}
	for _, m := range specCite.FindAllStringSubmatchIndex(text, -1) {
		end := strings.Index(text[m[0]:], "§") + m[0]
		sec := bareSection.FindString(text[end:])
		ref := strings.Join(strings.Fields(text[m[2]:m[3]]), " ") + " " + sec
		reported[end] = true
		c.add(rel, lineAt(src, base+m[0]), ref, "cites a section of a specification that is not in the repository", citeFix)
	}
	for _, m := range bareSection.FindAllStringIndex(text, -1) {
		if reported[m[0]] || rfcBefore.MatchString(text[:m[0]]) {
			continue
		}
		c.add(rel, lineAt(src, base+m[0]), text[m[0]:m[1]], "cites a section without a document in the repository", citeFix)
	}
}

// docPaths reports docs/….md paths in src that name a missing page or
// anchor.
func (c *checker) docPaths(rel string, src []byte) {
	for _, m := range docPath.FindAllSubmatchIndex(src, -1) {
		page := string(src[m[2]:m[3]])
		anchor := ""
		if m[4] >= 0 {
			anchor = string(src[m[4]+1 : m[5]])
		}
		c.target(rel, lineAt(src, m[2]), string(src[m[2]:max(m[3], m[5])]), page, anchor)
	}
}

// target checks that page (a slash path from the root) exists and, when
// anchor is not "", that it has that anchor.
func (c *checker) target(rel string, line int, ref, page, anchor string) {
	info, err := os.Stat(filepath.Join(c.root, filepath.FromSlash(page)))
	if err != nil {
		c.add(rel, line, ref, "no such file", "correct the path, or restore "+page)
		return
	}
	if anchor == "" || info.IsDir() || !strings.HasSuffix(page, ".md") {
		return
	}
	anchors, err := c.pageAnchors(page)
	if err != nil {
		c.add(rel, line, ref, "cannot read "+page+": "+err.Error(), "make the file readable")
		return
	}
	if !anchors[anchor] {
		c.add(rel, line, ref, fmt.Sprintf("%s has no anchor %q", page, anchor),
			fmt.Sprintf(`use one of the anchors of %s, or add <a id="%s"></a> before the heading it means`, page, anchor))
	}
}

var (
	// mdLink is an inline link or image: [text](target "title").
	mdLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	// mdRef is a reference definition: [label]: target.
	mdRef = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	// external is a link with a scheme, or protocol-relative.
	external = regexp.MustCompile(`^(?:[A-Za-z][A-Za-z0-9+.-]*:|//)`)
)

// page checks the relative links of one Markdown file.
func (c *checker) page(rel string) error {
	src, err := os.ReadFile(filepath.Join(c.root, rel))
	if err != nil {
		return err
	}
	dir := filepath.ToSlash(filepath.Dir(rel))
	for i, line := range markdownProse(string(src)) {
		var targets []string
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
		}
		if m := mdRef.FindStringSubmatch(line); m != nil {
			targets = append(targets, m[1])
		}
		for _, t := range targets {
			if t == "" || external.MatchString(t) {
				continue
			}
			path, anchor, _ := strings.Cut(t, "#")
			path, _, _ = strings.Cut(path, "?")
			page := rel
			if path != "" {
				if strings.HasPrefix(path, "/") {
					page = strings.TrimPrefix(path, "/")
				} else {
					page = filepath.ToSlash(filepath.Clean(filepath.Join(dir, path)))
				}
			}
			c.target(rel, i+1, t, page, anchor)
		}
	}
	return nil
}

// markdownProse returns the lines of a Markdown page with fenced code blocks
// and inline code spans blanked, so examples are not taken for links.
func markdownProse(text string) []string {
	var out []string
	fence := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		trim := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trim, fence) {
				fence = ""
			}
			out = append(out, "")
			continue
		}
		if strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~") {
			fence = trim[:3]
			out = append(out, "")
			continue
		}
		out = append(out, inlineCode.ReplaceAllString(line, "``"))
	}
	return out
}

var (
	inlineCode = regexp.MustCompile("`[^`]*`")
	explicitID = regexp.MustCompile(`<[a-zA-Z][^>]*\s(?:id|name)\s*=\s*["']([^"']+)["']`)
	heading    = regexp.MustCompile(`^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlTag    = regexp.MustCompile(`<[^>]+>`)
	linkText   = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
)

// pageAnchors returns the anchors of a Markdown page: explicit ids and the
// GitHub-style slugs of its headings (a repeated slug gets -1, -2, …).
func (c *checker) pageAnchors(page string) (map[string]bool, error) {
	if a, ok := c.anchors[page]; ok {
		return a, nil
	}
	src, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(page)))
	if err != nil {
		return nil, err
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	fence := ""
	for _, line := range strings.Split(string(src), "\n") {
		trim := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trim, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~") {
			fence = trim[:3]
			continue
		}
		for _, m := range explicitID.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			s := slug(m[2])
			if n := seen[s]; n > 0 {
				anchors[fmt.Sprintf("%s-%d", s, n)] = true
			} else {
				anchors[s] = true
			}
			seen[s]++
		}
	}
	c.anchors[page] = anchors
	return anchors, nil
}

// slug is GitHub's anchor for a heading: the rendered text lowercased,
// punctuation other than '-' and '_' removed, spaces turned into '-'.
func slug(text string) string {
	text = linkText.ReplaceAllString(text, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// lineAt is the 1-based line of offset off in src.
func lineAt(src []byte, off int) int {
	return strings.Count(string(src[:off]), "\n") + 1
}

func (c *checker) add(file string, line int, ref, what, fix string) {
	c.problems = append(c.problems, problem{file: file, line: line, ref: ref, what: what, fix: fix})
}
