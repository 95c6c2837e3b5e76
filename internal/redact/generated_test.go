package redact

import (
	"bytes"
	_ "embed"
	"flag"
	"fmt"
	"go/format"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// gitleaksTOML is the default rule set of gitleaks v8 (see the header of the
// file for its source and licence), from which gitleaks_rules.go is made.
//
//go:embed gitleaks.toml
var gitleaksTOML string

var updateRules = flag.Bool("update-rules", false, "rewrite gitleaks_rules.go from gitleaks.toml")

// TestGeneratedRulesMatchTOML: gitleaks_rules.go, which the built-in set is
// built from so that no process decodes 100 KB of TOML at start-up, holds
// exactly what gitleaks.toml says. After updating gitleaks.toml, run
// `go test ./internal/redact -run TestGeneratedRulesMatchTOML -update-rules`.
func TestGeneratedRulesMatchTOML(t *testing.T) {
	dec := toml.NewDecoder(strings.NewReader(gitleaksTOML))
	dec.DisallowUnknownFields()
	var cfg tomlConfig
	if err := dec.Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	if *updateRules {
		src, err := generateRules(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("gitleaks_rules.go", src, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !reflect.DeepEqual(cfg, gitleaksRules) {
		t.Fatal("gitleaks_rules.go is not gitleaks.toml; regenerate it with -update-rules")
	}
	shapes, err := ruleShapes(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(shapes, gitleaksShapes) {
		t.Fatal("the shapes of gitleaks_rules.go are not those of the parsed rules; regenerate it with -update-rules")
	}
}

// ruleShapes parses every rule with a regexp, by index (nil for the others).
func ruleShapes(cfg tomlConfig) ([]*ruleShape, error) {
	out := make([]*ruleShape, len(cfg.Rules))
	for i, tr := range cfg.Rules {
		if tr.Regex == "" {
			continue
		}
		sh, err := parseShape(tr)
		if err != nil {
			return nil, err
		}
		out[i] = sh
	}
	return out, nil
}

// generateRules writes cfg as the Go source of gitleaks_rules.go.
func generateRules(cfg tomlConfig) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated from gitleaks.toml by TestGeneratedRulesMatchTOML -update-rules. DO NOT EDIT.\n\n")
	b.WriteString("// The rules are those of gitleaks.toml: gitleaks v8, MIT License,\n// Copyright (c) 2019 Zachary Rice; the full notice is in gitleaks.LICENSE.\n\n")
	b.WriteString("package redact\n\nvar gitleaksRules = tomlConfig{\n")
	fmt.Fprintf(&b, "Title: %s, MinVersion: %s,\n", strconv.Quote(cfg.Title), strconv.Quote(cfg.MinVersion))
	b.WriteString("Allowlist: ")
	writeAllowlist(&b, cfg.Allowlist)
	b.WriteString(",\nRules: []tomlRule{\n")
	for _, r := range cfg.Rules {
		fmt.Fprintf(&b, "{ID: %s, Description: %s, Regex: %s", strconv.Quote(r.ID), strconv.Quote(r.Description), strconv.Quote(r.Regex))
		if r.SecretGroup != 0 {
			fmt.Fprintf(&b, ", SecretGroup: %d", r.SecretGroup)
		}
		if r.Entropy != 0 {
			fmt.Fprintf(&b, ", Entropy: %s", strconv.FormatFloat(r.Entropy, 'g', -1, 64))
		}
		if r.Keywords != nil {
			b.WriteString(", Keywords: ")
			writeStrings(&b, r.Keywords)
		}
		if r.Path != "" {
			fmt.Fprintf(&b, ", Path: %s", strconv.Quote(r.Path))
		}
		if r.Allowlists != nil {
			b.WriteString(", Allowlists: ")
			writeList(&b, "[]tomlAllowlist", r.Allowlists, writeAllowlist)
		}
		b.WriteString("},\n")
	}
	b.WriteString("},\n}\n\n")
	shapes, err := ruleShapes(cfg)
	if err != nil {
		return nil, err
	}
	b.WriteString("// gitleaksShapes are the shapes of the rules of gitleaksRules, by index,\n// as parseShape derives them.\nvar gitleaksShapes = []*ruleShape{\n")
	for _, sh := range shapes {
		if sh == nil {
			b.WriteString("nil,\n")
			continue
		}
		b.WriteString("{")
		if sh.groups != nil {
			fmt.Fprintf(&b, "groups: %#v, ", sh.groups)
		}
		if sh.clauses != nil {
			b.WriteString("clauses: ")
			writeList(&b, "[]clause", sh.clauses, func(b *bytes.Buffer, c clause) { writeStrings(b, c) })
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}

// writeList writes items as a composite literal of type typ.
func writeList[T any](b *bytes.Buffer, typ string, items []T, write func(*bytes.Buffer, T)) {
	b.WriteString(typ + "{")
	for _, it := range items {
		write(b, it)
		b.WriteString(", ")
	}
	b.WriteString("}")
}

func writeAllowlist(b *bytes.Buffer, a tomlAllowlist) {
	fmt.Fprintf(b, "tomlAllowlist{Description: %s, Condition: %s, RegexTarget: %s", strconv.Quote(a.Description), strconv.Quote(a.Condition), strconv.Quote(a.RegexTarget))
	for _, f := range []struct {
		name string
		list []string
	}{{"Paths", a.Paths}, {"Regexes", a.Regexes}, {"Stopwords", a.Stopwords}} {
		if f.list != nil {
			fmt.Fprintf(b, ", %s: ", f.name)
			writeStrings(b, f.list)
		}
	}
	b.WriteString("}")
}

func writeStrings(b *bytes.Buffer, list []string) {
	quoted := make([]string, len(list))
	for i, s := range list {
		quoted[i] = strconv.Quote(s)
	}
	b.WriteString("[]string{" + strings.Join(quoted, ", ") + "}")
}
