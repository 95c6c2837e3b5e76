package policy

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// The document index walks the TOML syntax tree (go-toml's unstable.Parser)
// once to learn what the typed decoder cannot say:
//
//   - the line of every key path, for semantic errors
//     (docs/design/checks.md#policy-loading);
//   - the key path of a key at a given line and column, so an unknown key
//     that the decoder reports inside an inline array of tables is named
//     command_rules[1].foo rather than just foo;
//   - keys that differ from a known key only in case: the decoder matches
//     keys case-insensitively, but TOML keys are case-sensitive, so
//     `Decision = "allow"` must be an unknown key, not a silent alias;
//   - rule lists written as a table or a scalar, which the decoder would
//     accept as a one-element list.

// schema lists the keys of one table. lists maps the keys whose value is an
// array of tables to the schema of their elements.
type schema struct {
	keys  []string
	lists map[string]*schema
	// tables maps the keys whose value is a plain table ([network]) to
	// its schema.
	tables map[string]*schema
}

func (s *schema) fold(k string) (string, bool) {
	for _, known := range s.keys {
		if strings.EqualFold(known, k) {
			return known, true
		}
	}
	return "", false
}

var (
	commandRuleSchema = &schema{keys: []string{"id", "program", "args", "decision", "reason", "gate"}}
	pathRuleSchema    = &schema{keys: []string{"id", "glob", "prefix", "actions", "decision", "reason", "gate"}}
	domainRuleSchema  = &schema{keys: []string{"id", "host", "cidr", "decision", "reason", "gate"}}
	gateSchema        = &schema{keys: []string{"id", "when", "timeout_seconds", "on_timeout", "reason"}}
	observationSchema = &schema{keys: []string{"id", "label", "pattern", "action"}}
	controlSchema     = &schema{keys: []string{"id", "title", "evidence"}}
	topSchema         = &schema{
		keys: []string{"name", "version", "description", "max_steps", "allowed_actions", "forbidden_actions", "executables",
			"default_command_decision", "default_path_decision", "default_domain_decision", "approval_timeout_seconds",
			"command_rules", "path_rules", "domain_rules", "approval_gates", "observation_rules", "controls",
			"default_mcp_tool_decision", "mcp_tool_rules", "network", "workspace"},
		lists: map[string]*schema{
			"command_rules": commandRuleSchema, "path_rules": pathRuleSchema, "domain_rules": domainRuleSchema,
			"approval_gates": gateSchema, "observation_rules": observationSchema, "controls": controlSchema,
			"mcp_tool_rules": mcpToolRuleSchema,
		},
		tables: map[string]*schema{"network": networkSchema, "workspace": workspaceSchema},
	}
)

type linecol struct{ line, col int }

// docIndex is the result of indexing one document.
type docIndex struct {
	data       []byte
	lineStarts []int
	lines      map[string]int     // key path -> line of its first appearance
	keyAt      map[linecol]string // position of a key -> its key path
	problems   []Problem
	arrays     map[string]int // array-of-tables path -> elements so far
}

// indexDocument walks data. It returns the parser's error for a document
// that is not TOML; the decoder reports that error with its position.
func indexDocument(data []byte) (*docIndex, error) {
	ix := &docIndex{data: data, lines: map[string]int{}, keyAt: map[linecol]string{}, arrays: map[string]int{}}
	ix.lineStarts = append(ix.lineStarts, 0)
	for i, c := range data {
		if c == '\n' {
			ix.lineStarts = append(ix.lineStarts, i+1)
		}
	}
	var p unstable.Parser
	p.Reset(data)
	cur, curSchema := "", topSchema
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.KeyValue:
			ix.keyValue(e, cur, curSchema)
		case unstable.Table, unstable.ArrayTable:
			cur, curSchema = ix.header(e, e.Kind == unstable.ArrayTable)
		}
	}
	return ix, p.Error()
}

// pos returns the 1-based line and column of a byte offset.
func (ix *docIndex) pos(off int) linecol {
	i := sort.Search(len(ix.lineStarts), func(i int) bool { return ix.lineStarts[i] > off }) - 1
	return linecol{i + 1, off - ix.lineStarts[i] + 1}
}

// nodeLine returns the line of a node, or 0 when the parser recorded no
// range for it.
func (ix *docIndex) nodeLine(n *unstable.Node) int {
	if n.Raw.Length == 0 {
		if n.Kind == unstable.InlineTable {
			it := n.Children()
			if it.Next() {
				k := it.Node().Key()
				if k.Next() {
					return ix.nodeLine(k.Node())
				}
			}
		}
		return 0
	}
	return ix.pos(int(n.Raw.Offset)).line
}

func (ix *docIndex) record(path string, n *unstable.Node) int {
	line := ix.nodeLine(n)
	if line == 0 {
		return 0
	}
	if _, ok := ix.lines[path]; !ok {
		ix.lines[path] = line
	}
	if n.Kind == unstable.Key {
		ix.keyAt[ix.pos(int(n.Raw.Offset))] = path
	}
	return line
}

// joinKey appends a key to a key path. A key that is not a bare TOML key
// is quoted, so a key path never contains a newline or a dot that is not a
// separator (one problem per line stays one line).
func joinKey(parent, k string) string {
	if !bareKey(k) {
		k = strconv.Quote(k)
	}
	if parent == "" {
		return k
	}
	return parent + "." + k
}

func bareKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func indexKey(parent string, i int) string { return parent + "[" + strconv.Itoa(i) + "]" }

// checkCase reports a key that matches a known key only when case is
// ignored.
func (ix *docIndex) checkCase(s *schema, k, path string, line int) {
	if s == nil {
		return
	}
	known, ok := s.fold(k)
	if ok && known != k {
		ix.problems = append(ix.problems, Problem{line, path, fmt.Sprintf("unknown key (keys are case-sensitive: did you mean %q?)", known)})
	}
}

// header handles [a.b] and [[a.b]] and returns the new current table path
// and its schema (nil when the table is not one the policy defines).
func (ix *docIndex) header(e *unstable.Node, array bool) (string, *schema) {
	path, s := "", topSchema
	var first *unstable.Node
	it := e.Key()
	for it.Next() {
		kn := it.Node()
		if first == nil {
			first = kn
		}
		k := string(kn.Data)
		last := it.IsLast()
		path = joinKey(path, k)
		line := ix.record(path, kn)
		ix.checkCase(s, k, path, line)
		var next *schema
		if s != nil {
			if ls := s.lists[k]; ls != nil {
				switch {
				case last && array, !last && ix.arrays[path] > 0:
					// [[k]], or [k.sub] naming a table in the last element.
					next = ls
				default:
					ix.problems = append(ix.problems, Problem{line, path,
						fmt.Sprintf("expected an array of tables ([[%s]] or %s = [{ … }]), got a table", k, k)})
				}
			} else if ts := s.tables[k]; ts != nil && last && !array {
				next = ts
			}
		}
		s = next
		named := path
		if last && array {
			ix.arrays[path]++
			path = indexKey(path, ix.arrays[path]-1)
			ix.record(path, kn)
		} else if n := ix.arrays[path]; n > 0 {
			path = indexKey(path, n-1)
		}
		if last {
			// The decoder reports a header at the position of its first key
			// part; name the whole header there.
			ix.keyAt[ix.pos(int(first.Raw.Offset))] = named
		}
	}
	return path, s
}

// keyValue handles k = v (k possibly dotted) in the table at parent.
func (ix *docIndex) keyValue(e *unstable.Node, parent string, s *schema) {
	path := parent
	it := e.Key()
	var line int
	dotted := false
	for it.Next() {
		kn := it.Node()
		k := string(kn.Data)
		path = joinKey(path, k)
		line = ix.record(path, kn)
		ix.checkCase(s, k, path, line)
		if !it.IsLast() {
			dotted = true
			if s != nil && s.lists[k] != nil {
				ix.problems = append(ix.problems, Problem{line, path,
					fmt.Sprintf("expected an array of tables ([[%s]] or %s = [{ … }]), got a table", k, k)})
			}
			if s != nil && s.tables[k] != nil {
				// network.mode = …: the keys below are the table's.
				s = s.tables[k]
				continue
			}
			s = nil
		}
	}
	var elem *schema
	if s != nil && !dotted {
		// The last key part is the one the value belongs to.
		elem = s.lists[lastKeyPart(e)]
	}
	ix.value(e.Value(), path, line, elem)
}

func lastKeyPart(e *unstable.Node) string {
	var k string
	it := e.Key()
	for it.Next() {
		k = string(it.Node().Data)
	}
	return k
}

// value records the lines of array elements and walks inline tables. elem
// is the element schema when the value must be an array of tables.
func (ix *docIndex) value(v *unstable.Node, path string, line int, elem *schema) {
	switch v.Kind {
	case unstable.Array:
		it := v.Children()
		for i := 0; it.Next(); i++ {
			n := it.Node()
			p := indexKey(path, i)
			l := ix.nodeLine(n)
			if l == 0 {
				l = line
			}
			if _, ok := ix.lines[p]; !ok {
				ix.lines[p] = l
			}
			if elem != nil && n.Kind != unstable.InlineTable {
				ix.problems = append(ix.problems, Problem{l, p, "expected a table ({ … }), got " + kindName(n.Kind)})
				continue
			}
			if n.Kind == unstable.InlineTable {
				ix.inlineTable(n, p, elem)
			}
		}
	case unstable.InlineTable:
		if elem != nil {
			ix.problems = append(ix.problems, Problem{line, path, "expected an array of tables, got an inline table (wrap it in [ ])"})
			return
		}
		ix.inlineTable(v, path, nil)
	default:
		if elem != nil {
			ix.problems = append(ix.problems, Problem{line, path, "expected an array of tables, got " + kindName(v.Kind)})
		}
	}
}

func (ix *docIndex) inlineTable(t *unstable.Node, path string, s *schema) {
	it := t.Children()
	for it.Next() {
		ix.keyValue(it.Node(), path, s)
	}
}

// kindName names a TOML value kind for messages.
func kindName(k unstable.Kind) string {
	switch k {
	case unstable.String:
		return "string"
	case unstable.Integer:
		return "integer"
	case unstable.Float:
		return "float"
	case unstable.Bool:
		return "boolean"
	case unstable.Array:
		return "array"
	case unstable.InlineTable:
		return "table"
	case unstable.LocalDate, unstable.LocalTime, unstable.LocalDateTime, unstable.DateTime:
		return "datetime"
	}
	return k.String()
}

// line returns the line of a key path, or of its nearest recorded parent
// (a missing key is reported at the table that lacks it), or 1.
func (ix *docIndex) line(path string) int {
	for path != "" {
		if l, ok := ix.lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 1
}
