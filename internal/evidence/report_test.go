package evidence

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ironvise/ironvise/internal/ledger"
)

// goldenReport builds the report of the frozen certificate offline, so the
// golden outputs do not depend on fresh ids, keys or times.
func goldenReport(t *testing.T) *Report {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "session.elc"))
	if err != nil {
		t.Fatal(err)
	}
	c, _, _, err := ParseCertificate(data)
	if err != nil {
		t.Fatal(err)
	}
	in, problem, _ := verifyInput(c, testIssuerPub(t))
	if problem != "" {
		t.Fatal(problem)
	}
	root, err := multiRoot(&c.InclusionProof, in.Events)
	if err != nil {
		t.Fatal(err)
	}
	in.StoredRoot = &root
	vr := ledger.VerifyEvents(in)
	s := *in.Session
	parse := func(p *string) time.Time {
		if p == nil {
			return time.Time{}
		}
		tm, err := time.Parse(ledger.TimeFormat, *p)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	s.CreatedAt, s.FinishedAt = parse(&c.Session.CreatedAt), parse(c.Session.FinishedAt)
	s.LLMBackend, s.LLMModel, s.SandboxTier, s.AgentLoop = c.Session.LLMBackend, c.Session.LLMModel, c.Session.SandboxTier, c.Session.AgentLoop
	r := assemble(&s, in.Events, chainStatus(&vr), time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	r.Session.IssuerKeyID = c.Issuer.KeyID
	fixture := "fixture"
	r.Session.PolicyName = &fixture
	return r
}

// TestReportNamesPolicyAndIssuer: the report names the policy whose hash
// the session recorded (when the caller can match it) and the issuer key,
// and the HTML page shows both with the committed actions.
func TestReportNamesPolicyAndIssuer(t *testing.T) {
	l := newTestLedger(t)
	id := buildFixture(t, l)
	ctx := context.Background()
	want := sum("[policy]\nname = \"fixture\"\n")
	r, err := BuildReportWith(ctx, l, id, ReportOptions{PolicyName: func(hash string) string {
		if hash == want {
			return "fixture"
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Session.PolicyName == nil || *r.Session.PolicyName != "fixture" || r.Session.IssuerKeyID != ledger.KeyID(testIssuerPub(t)) {
		t.Fatalf("session header: policy name %v, issuer key id %q", r.Session.PolicyName, r.Session.IssuerKeyID)
	}
	var page bytes.Buffer
	if _, err := ExportWith(ctx, l, id, FormatHTML, &page, nil, ReportOptions{PolicyName: func(string) string { return "fixture" }}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"<th>Policy</th><td class=\"\">fixture (", "<th>Issuer key id</th><td class=\"mono\">" + ledger.KeyID(testIssuerPub(t)),
		"<h2>Executed actions</h2>", "run_command ls -la</td><td>allow</td><td class=\"pre\">executed · sandbox ok</td><td>0</td><td>12 ms</td>",
		"2 of 3 committed action(s) executed",
	} {
		if !strings.Contains(page.String(), s) {
			t.Fatalf("html report lacks %q:\n%s", s, page.String())
		}
	}
	// Without a match the report says the name is unknown, never guesses.
	r, err = BuildReportWith(ctx, l, id, ReportOptions{PolicyName: func(string) string { return "" }})
	if err != nil || r.Session.PolicyName != nil {
		t.Fatalf("unmatched policy named %v (%v)", r.Session.PolicyName, err)
	}
}

var goldenFormats = map[Format]string{
	FormatJSON: "report.json", FormatSARIF: "report.sarif", FormatHTML: "report.html",
	FormatGitHubActions: "report.github_actions.txt", FormatGitLabCodeQuality: "report.gitlab_codequality.json",
}

func TestReportGolden(t *testing.T) {
	r := goldenReport(t)
	for f, name := range goldenFormats {
		t.Run(string(f), func(t *testing.T) {
			var buf bytes.Buffer
			if err := Render(r, f, &buf); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "golden", name)
			if *update {
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("%s differs from %s (go test -update rewrites it after a deliberate change):\n%s", f, path, buf.String())
			}
		})
	}
}

func TestReportContent(t *testing.T) {
	r := goldenReport(t)
	if !r.Chain.OK || !r.Gate() || r.Summary.Gate != "fail" || r.Summary.HighestSeverity != "critical" {
		t.Fatalf("chain/gate: %+v %+v", r.Chain, r.Summary)
	}
	if len(r.Findings) != 4 || len(r.Denials) != 3 || r.Summary.Denied != 3 || r.Summary.DeniedBy["tripwire"] != 1 ||
		r.Summary.DeniedBy["policy"] != 1 || r.Summary.DeniedBy["guard"] != 1 || r.Summary.SandboxRuns["aborted"] != 1 ||
		r.Summary.SandboxRuns["ok"] != 1 || r.Summary.Executed != 2 || r.Summary.Intents != 7 || !r.Summary.Credential {
		t.Fatalf("summary: %+v", r.Summary)
	}
	// The read and ls ran; the command the sandbox aborted is listed and
	// not counted (docs/evidence.md#executed-actions).
	if len(r.Actions) != 3 || !r.Actions[0].Executed || !r.Actions[1].Executed || r.Actions[2].Executed ||
		r.Actions[1].Status != "ok" || r.Actions[1].ExitCode == nil || *r.Actions[1].DurationMS != 12 ||
		r.Actions[2].Status != "aborted" || r.Actions[2].Target != "mount --bind / /mnt" {
		t.Fatalf("actions: %+v", r.Actions)
	}
	f := r.Findings[0]
	if f.Severity != "critical" || len(f.Locations) != 1 || !f.Locations[0].Verified || f.Locations[0].Path() != "config/app.yaml" || f.Locations[0].Line != 3 {
		t.Fatalf("critical finding located at %+v", f.Locations)
	}
	if d := r.Denials[0]; d.Check != "tripwire" || d.Code != "cmd_download_exec" || d.Action != "run_command" || !strings.Contains(d.Target, "| sh") || d.Rule != "download|exec" {
		t.Fatalf("denial: %+v", d)
	}
}

// sarifSchema compiles the SARIF 2.1.0 JSON schema named by
// IRONVISE_SARIF_SCHEMA. The schema is not kept in this repository: CI
// takes it from the SARIF SDK's published package on the npm registry
// (@microsoft/sarif-multitool-linux ships sarif-2.1.0.json; see .ci/run).
// Without the variable the test skips and says how to run it.
func sarifSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	path := os.Getenv("IRONVISE_SARIF_SCHEMA")
	if path == "" {
		t.Skip("IRONVISE_SARIF_SCHEMA is not set: point it at sarif-2.1.0.json from the npm package @microsoft/sarif-multitool-linux (.ci/run does) to validate the SARIF output")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("IRONVISE_SARIF_SCHEMA: %v", err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const url = "https://json.schemastore.org/sarif-2.1.0.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validateSARIF(t *testing.T, s *jsonschema.Schema, data []byte) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(inst)
}

func TestSARIFValidAgainstOfficialSchema(t *testing.T) {
	schema := sarifSchema(t)
	empty := &Report{Format: ReportFormatVersion, Session: SessionInfo{ID: uuid.NewString(), Status: "completed"}, Denials: []Denial{}}
	for name, r := range map[string]*Report{"fixture": goldenReport(t), "no findings": empty} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Render(r, FormatSARIF, &buf); err != nil {
				t.Fatal(err)
			}
			if err := validateSARIF(t, schema, buf.Bytes()); err != nil {
				t.Fatalf("SARIF invalid: %v", err)
			}
		})
	}
	// The validator is live: a result level SARIF does not define fails.
	var buf bytes.Buffer
	Render(goldenReport(t), FormatSARIF, &buf)
	bad := bytes.Replace(buf.Bytes(), []byte(`"level": "error"`), []byte(`"level": "critical"`), 1)
	if err := validateSARIF(t, schema, bad); err == nil {
		t.Fatal("the schema accepted an invalid level: the validator is not validating")
	}
}

func TestHTMLIsEscapedAndSelfContained(t *testing.T) {
	var buf bytes.Buffer
	if err := Render(goldenReport(t), FormatHTML, &buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	// The fixture's quote holds the password; a report carries its
	// placeholder, never the password.
	for _, bad := range []string{"<script", "<secrets.txt>", `src=`, `href=`, "url(", "@import", "hunter2"} {
		if strings.Contains(out, bad) {
			t.Errorf("HTML contains %q", bad)
		}
	}
	for _, want := range []string{"&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;", "World-writable &lt;secrets.txt&gt;", "default-src 'none'", "admin_password: [REDACTED:key-value-secret:hmac-sha256="} {
		if !strings.Contains(out, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

func TestGitHubActionsCommandsEscaped(t *testing.T) {
	r := goldenReport(t)
	var buf bytes.Buffer
	if err := Render(r, FormatGitHubActions, &buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(r.Findings)+len(r.Denials)+1 {
		t.Fatalf("%d lines for %d findings and %d denials:\n%s", len(lines), len(r.Findings), len(r.Denials), buf.String())
	}
	for _, l := range lines {
		// One command per line, nothing an agent wrote can start another.
		if !strings.HasPrefix(l, "::error ") && !strings.HasPrefix(l, "::warning ") && !strings.HasPrefix(l, "::notice ") {
			t.Fatalf("line is not a workflow command: %q", l)
		}
	}
	if !strings.HasPrefix(lines[0], "::error file=config/app.yaml,line=3,title=IronVise critical%3A Admin password in config | key=value \\ path%0Asecond line::") {
		t.Fatalf("critical finding: %q", lines[0])
	}
	if !strings.Contains(lines[2], "title=IronVise medium%3A World-writable <secrets.txt> %250A%3A%3Aerror%3A%3Ainjected") || !strings.Contains(lines[2], "50%25 of files") {
		t.Fatalf("medium finding property escaping: %q", lines[2])
	}
}

func TestGitLabCodeQuality(t *testing.T) {
	var buf bytes.Buffer
	if err := Render(goldenReport(t), FormatGitLabCodeQuality, &buf); err != nil {
		t.Fatal(err)
	}
	var issues []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &issues); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, is := range issues {
		fp, _ := is["fingerprint"].(string)
		loc, _ := is["location"].(map[string]any)
		lines, _ := loc["lines"].(map[string]any)
		if fp == "" || seen[fp] || is["check_name"] == "" || is["description"] == "" || loc["path"] == "" || lines["begin"] == nil {
			t.Fatalf("issue lacks a required field or repeats a fingerprint: %v", is)
		}
		seen[fp] = true
		switch is["severity"] {
		case "info", "minor", "major", "critical", "blocker":
		default:
			t.Fatalf("severity %v", is["severity"])
		}
	}
	if len(issues) != 7 || issues[0]["severity"] != "blocker" || issues[0]["check_name"] != "ironvise/finding/critical" {
		t.Fatalf("issues: %v", issues)
	}
}

func TestBuildReportAndExport(t *testing.T) {
	l := newTestLedger(t)
	id := buildFixture(t, l)
	ctx := context.Background()
	r, err := BuildReport(ctx, l, id)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Chain.OK || !r.Gate() || len(r.Findings) != 4 || r.Session.ID != id.String() || !r.Session.Sealed {
		t.Fatalf("report: %+v", r.Chain)
	}
	for _, f := range Formats {
		var buf bytes.Buffer
		gate, err := Export(ctx, l, id, f, &buf)
		if err != nil || !gate || buf.Len() == 0 {
			t.Fatalf("export %s: gate %v err %v", f, gate, err)
		}
	}
	// Low and medium findings pass the gate.
	f := newSession(t, l)
	obs := f.run("read_file", map[string]any{"path": "a"}, "", "x")
	f.complete(finding("medium", "m", "e", "r", []int64{obs}, nil), finding("low", "l", "e", "r", nil, nil))
	for _, fm := range Formats {
		gate, err := Export(ctx, l, f.id, fm, &bytes.Buffer{})
		if err != nil || gate {
			t.Fatalf("export %s of a medium/low session: gate %v err %v", fm, gate, err)
		}
	}
	if _, err := Export(ctx, l, id, "pdf", &bytes.Buffer{}); err == nil {
		t.Fatal("unknown format accepted")
	}
	if _, err := BuildReport(ctx, l, uuid.New()); !IsNotFound(err) {
		t.Fatalf("unknown session: %v", err)
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range Formats {
		if g, err := ParseFormat(string(f)); err != nil || g != f {
			t.Fatalf("%s: %v", f, err)
		}
	}
	for _, s := range []string{"", "JSON", "sarif2", "pdf"} {
		if _, err := ParseFormat(s); err == nil || !strings.Contains(err.Error(), "gitlab_codequality") {
			t.Fatalf("%q: %v", s, err)
		}
	}
}
