//go:build linux

package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The CI and first-audit examples of the documentation, run as written:
// the commands are read from the Markdown, not copied here, and run with
// the built binary against the mock model, each step required to succeed.

// ciScript is the mock model of the examples: it reads the deployment
// file and completes with one medium finding quoting it, so no step's
// gate fails (a high finding would fail `report`, as documented).
const ciScript = `{"role":"agent","content":"{\"action\":\"read_file\",\"params\":{\"path\":\"deploy.yaml\"},\"justification\":\"read the deployment config for exposed secrets\"}"}
{"role":"guard","content":"ALLOW"}
{"role":"agent","content":"{\"action\":\"complete\",\"params\":{\"findings\":[{\"severity\":\"medium\",\"title\":\"Image pinned to a moving tag\",\"evidence\":\"deploy.yaml uses the latest tag\",\"recommendation\":\"Pin the image by digest.\",\"evidence_sequence\":[9],\"evidence_quotes\":[\"api:latest\"]}]},\"justification\":\"the review is done\"}"}
{"role":"guard","content":"ALLOW"}
`

// mdBlock is one fenced code block of a Markdown file.
type mdBlock struct {
	lang, text string
	// intro is the prose between the previous block and this one.
	intro string
	line  int
}

// markdownBlocks reads the fenced code blocks of the Markdown file path.
func markdownBlocks(t *testing.T, path string) []mdBlock {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []mdBlock
	var cur *mdBlock
	var prose strings.Builder
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &mdBlock{lang: strings.TrimPrefix(line, "```"), intro: prose.String(), line: i + 1}
			prose.Reset()
		case cur != nil && line == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		default:
			prose.WriteString(line + "\n")
		}
	}
	return blocks
}

// blockAfter is the only block of lang whose introduction contains marker.
func blockAfter(t *testing.T, blocks []mdBlock, lang, marker string) mdBlock {
	t.Helper()
	var found []mdBlock
	for _, b := range blocks {
		if b.lang == lang && strings.Contains(b.intro, marker) {
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s blocks after %q; want 1", len(found), lang, marker)
	}
	return found[0]
}

// indentOf counts a line's leading spaces.
func indentOf(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }

// ghStep is one step of a GitHub Actions job.
type ghStep struct {
	run, uses string
	with      map[string]string
}

// githubSteps reads the step list of a GitHub Actions example: steps of
// `name`, `run` (one line or a `|` block), `uses` and a flow-map `with`.
// Anything else fails the test, so that no step is skipped unnoticed.
func githubSteps(t *testing.T, text string) []ghStep {
	t.Helper()
	var steps []ghStep
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.HasPrefix(line, "- ") {
			steps = append(steps, ghStep{})
			line = "  " + line[2:]
		}
		if len(steps) == 0 || indentOf(line) != 2 {
			t.Fatalf("unexpected line in the GitHub Actions example: %q", lines[i])
		}
		key, value, _ := strings.Cut(strings.TrimSpace(line), ":")
		value = strings.TrimSpace(value)
		st := &steps[len(steps)-1]
		switch key {
		case "name":
		case "uses":
			st.uses = value
		case "with":
			st.with = map[string]string{}
			for _, kv := range strings.Split(strings.Trim(value, "{} "), ",") {
				k, v, _ := strings.Cut(kv, ":")
				st.with[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		case "run":
			if value != "|" {
				st.run = value + "\n"
				continue
			}
			for i+1 < len(lines) && indentOf(lines[i+1]) > 2 {
				i++
				st.run += strings.TrimPrefix(lines[i], "    ") + "\n"
			}
		default:
			t.Fatalf("unexpected key %q in the GitHub Actions example", key)
		}
	}
	return steps
}

// gitlabJob reads the script lines and the code quality report of a
// GitLab CI example.
func gitlabJob(t *testing.T, text string) (script, report string) {
	t.Helper()
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		switch k := strings.TrimSpace(lines[i]); {
		case k == "script:":
			for i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "- ") {
				i++
				script += strings.TrimPrefix(strings.TrimSpace(lines[i]), "- ") + "\n"
			}
		case strings.HasPrefix(k, "codequality:"):
			report = strings.TrimSpace(strings.TrimPrefix(k, "codequality:"))
		}
	}
	if script == "" || report == "" {
		t.Fatalf("no script or no codequality report in the GitLab CI example:\n%s", text)
	}
	return script, report
}

// docsEnv is a checkout for the examples: repo holds the deployment file,
// a service directory and ./bin (ironvise and verify-cert, also on PATH);
// the data directory lies outside it.
type docsEnv struct {
	repo string
	env  []string
}

func newDocsEnv(t *testing.T, bin string) *docsEnv {
	t.Helper()
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	deploy := []byte("service: api\nreplicas: 2\nimage: registry.example.com/api:latest\n")
	for _, dir := range []string{repo, filepath.Join(repo, "service"), filepath.Join(root, "home")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(repo, "deploy.yaml"), filepath.Join(repo, "service", "deploy.yaml")} {
		if err := os.WriteFile(f, deploy, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(root, "script.jsonl")
	if err := os.WriteFile(script, []byte(ciScript), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(repo, "bin")); err != nil {
		t.Fatal(err)
	}
	return &docsEnv{repo: repo, env: []string{
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + filepath.Join(root, "home"),
		"ECTO_DATA_DIR=" + filepath.Join(root, "data"), "LLM_BACKEND=mock", "MOCK_LLM_SCRIPT=" + script, "LANG=C.UTF-8",
	}}
}

// shell runs script with bash as CI runners do (-e, pipefail) in the
// repository, failing the test with its trace when it fails.
func (d *docsEnv) shell(t *testing.T, what, script string, extra ...string) {
	t.Helper()
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-x", "-c", script)
	cmd.Dir = d.repo
	cmd.Env = append(append([]string{}, d.env...), extra...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s failed (%v):\n%s\n--- output ---\n%s", what, err, script, out)
	}
}

// buildDocsBin builds ironvise and verify-cert into one directory.
func buildDocsBin(t *testing.T) string {
	t.Helper()
	ironvise := buildIronvise(t)
	dir := filepath.Dir(ironvise)
	cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "verify-cert"), "github.com/ironvise/ironvise/cmd/verify-cert")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build verify-cert: %v\n%s", err, out)
	}
	return dir
}

func TestDocsExamplesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and runs the documented examples")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("the examples are bash")
	}
	bin := buildDocsBin(t)
	docs := filepath.Join("..", "..", "docs")
	evidenceMD := markdownBlocks(t, filepath.Join(docs, "evidence.md"))

	t.Run("GitHub Actions", func(t *testing.T) {
		d := newDocsEnv(t, bin)
		githubEnv := filepath.Join(t.TempDir(), "github_env")
		os.WriteFile(githubEnv, nil, 0o644)
		var vars []string
		steps := githubSteps(t, blockAfter(t, evidenceMD, "yaml", "GitHub Actions").text)
		ran := 0
		for i, st := range steps {
			if st.uses != "" {
				// An action is not run here; the files it is given must
				// be there, as the steps before wrote them.
				for k, v := range st.with {
					if strings.HasSuffix(k, "_file") {
						if _, err := os.Stat(filepath.Join(d.repo, v)); err != nil {
							t.Fatalf("step %d (%s) is given %s=%s: %v", i+1, st.uses, k, v, err)
						}
					}
				}
				continue
			}
			d.shell(t, "step "+st.run, st.run, append([]string{"GITHUB_ENV=" + githubEnv}, vars...)...)
			ran++
			// $GITHUB_ENV carries NAME=value lines to the later steps.
			f, err := os.Open(githubEnv)
			if err != nil {
				t.Fatal(err)
			}
			vars = nil
			for sc := bufio.NewScanner(f); sc.Scan(); {
				vars = append(vars, sc.Text())
			}
			f.Close()
		}
		if ran < 3 {
			t.Fatalf("ran %d steps of %d", ran, len(steps))
		}
		if len(vars) != 1 || !strings.HasPrefix(vars[0], "SESSION=") {
			t.Fatalf("$GITHUB_ENV holds %q; want the session id", vars)
		}
		if _, err := parseSessionID(strings.TrimPrefix(vars[0], "SESSION=")); err != nil {
			t.Fatalf("SESSION: %v", err)
		}
	})

	t.Run("GitLab CI", func(t *testing.T) {
		d := newDocsEnv(t, bin)
		script, report := gitlabJob(t, blockAfter(t, evidenceMD, "yaml", "GitLab CI").text)
		d.shell(t, "the GitLab CI script", script)
		data, err := os.ReadFile(filepath.Join(d.repo, report))
		if err != nil || !json.Valid(data) {
			t.Fatalf("the code quality report %s: %v %q", report, err, data)
		}
	})

	t.Run("install.md", func(t *testing.T) {
		if _, err := exec.LookPath("jq"); err != nil {
			t.Skip("the examples use jq")
		}
		// The blocks that use the session, in order, as a newcomer pastes
		// them into one terminal.
		var script string
		for _, b := range markdownBlocks(t, filepath.Join(docs, "install.md")) {
			if b.lang == "sh" && strings.Contains(b.text, "SESSION") {
				script += b.text
			}
		}
		if !strings.Contains(script, "SESSION=$(") {
			t.Fatal("no example in install.md sets $SESSION")
		}
		d := newDocsEnv(t, bin)
		d.shell(t, "install.md's session examples", script)
	})
}
