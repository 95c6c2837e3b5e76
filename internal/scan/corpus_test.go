package scan

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// corpusEntry is one text of testdata/corpus.json: injection attempts of
// every family the lists cover, the paraphrases and other languages they do
// not, and ordinary developer text (READMEs, scripts, Makefiles, configs,
// logs, code) that resembles them.
type corpusEntry struct {
	Name     string `json:"name"`
	Category string `json:"category"`
	Text     string `json:"text"`
}

func loadCorpus(t testing.TB) (inj, benign []corpusEntry) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "corpus.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Injections []corpusEntry `json:"injections"`
		Benign     []corpusEntry `json:"benign"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c.Injections, c.Benign
}

// outOfScope are the injection categories the scanner does not claim to
// catch: the guard is there for them (docs/scanner.md).
var outOfScope = []string{"paraphrase", "language"}

func withheld(r Result) bool {
	return slices.ContainsFunc(r.Spans, func(sp Span) bool { return sp.Fenced })
}

// TestCorpusRates measures, per sensitivity, how many injections are
// labeled and withheld from the model, and how many benign texts are
// labeled and have something withheld (the rates docs/scanner.md reports;
// go test -run TestCorpusRates -v ./internal/scan prints them). At medium,
// every injection in scope is withheld and no benign text loses anything.
func TestCorpusRates(t *testing.T) {
	inj, benign := loadCorpus(t)
	var table strings.Builder
	fmt.Fprintf(&table, "%-7s %-22s %-28s %-28s %-28s\n", "level", "injections labeled", "injections withheld (scope)", "injections withheld (all)", "benign: labeled / withheld")
	for _, sens := range []Sensitivity{Low, Medium, High} {
		s := newScanner(t, sens)
		inScope, caughtScope, caughtAll, injLabeled := 0, 0, 0, 0
		var missed []string
		for _, e := range inj {
			r := s.Scan(e.Text)
			scope := !slices.Contains(outOfScope, e.Category)
			if scope {
				inScope++
			}
			if len(r.Labels) > 0 {
				injLabeled++
			}
			if withheld(r) {
				caughtAll++
				if scope {
					caughtScope++
				}
			} else if scope {
				missed = append(missed, e.Name)
			}
		}
		labeled, lost := 0, 0
		var fps []string
		for _, e := range benign {
			r := s.Scan(e.Text)
			if len(r.Labels) > 0 {
				labeled++
			}
			if withheld(r) {
				lost++
				fps = append(fps, fmt.Sprintf("%s %v", e.Name, r.Labels))
			}
		}
		fmt.Fprintf(&table, "%-7s %-22s %-28s %-28s %-28s\n", sens,
			fmt.Sprintf("%d/%d (%.0f%%)", injLabeled, len(inj), pct(injLabeled, len(inj))),
			fmt.Sprintf("%d/%d (%.0f%%)", caughtScope, inScope, pct(caughtScope, inScope)),
			fmt.Sprintf("%d/%d (%.0f%%)", caughtAll, len(inj), pct(caughtAll, len(inj))),
			fmt.Sprintf("%d/%d (%.0f%%) / %d/%d (%.0f%%)", labeled, len(benign), pct(labeled, len(benign)), lost, len(benign), pct(lost, len(benign))))
		if sens == Medium {
			if len(missed) > 0 {
				t.Errorf("medium missed injections in scope: %v", missed)
			}
			if len(fps) > 0 {
				t.Errorf("medium withheld benign text: %v", fps)
			}
		}
		if sens == High && len(missed) > 0 {
			t.Errorf("high missed injections in scope: %v", missed)
		}
	}
	t.Logf("corpus: %d injections (%d out of scope: paraphrases, other languages), %d benign texts\n%s",
		len(inj), countOutOfScope(inj), len(benign), table.String())
}

func countOutOfScope(es []corpusEntry) int {
	n := 0
	for _, e := range es {
		if slices.Contains(outOfScope, e.Category) {
			n++
		}
	}
	return n
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}
