package evidence

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

// Format is a report format of docs/design/ledger.md#evidence-exports.
type Format string

// The six report formats.
const (
	FormatJSON              Format = "json"
	FormatSARIF             Format = "sarif"
	FormatHTML              Format = "html"
	FormatCertificate       Format = "certificate"
	FormatGitHubActions     Format = "github_actions"
	FormatGitLabCodeQuality Format = "gitlab_codequality"
)

// Formats lists the formats in documentation order.
var Formats = []Format{FormatJSON, FormatSARIF, FormatHTML, FormatCertificate, FormatGitHubActions, FormatGitLabCodeQuality}

// ParseFormat returns the format named s (exact, lowercase).
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return "", fmt.Errorf("%w %q (accepted: %s)", ErrUnknownFormat, s, strings.Join(names, ", "))
}

// Render writes r in format f. The certificate is not rendered from a
// report (it carries every event and the issuer's signature): use
// BuildCertificate or Export for it.
func Render(r *Report, f Format, w io.Writer) error {
	var err error
	switch f {
	case FormatJSON:
		err = writeJSON(w, r)
	case FormatSARIF:
		err = writeJSON(w, sarifLog(r))
	case FormatHTML:
		err = writeHTML(w, r)
	case FormatGitHubActions:
		err = writeGitHubActions(w, r)
	case FormatGitLabCodeQuality:
		err = writeJSON(w, gitlabIssues(r))
	case FormatCertificate:
		return fmt.Errorf("evidence: render %s: a certificate is built from the ledger, not from a report (use BuildCertificate)", f)
	default:
		return fmt.Errorf("evidence: render: %w %q", ErrUnknownFormat, f)
	}
	if err != nil {
		return fmt.Errorf("evidence: render %s: %w", f, err)
	}
	return nil
}

// Export writes session id's evidence in format f and reports whether the
// CI gate fails (a high or critical finding; the certificate format
// reports the gate of its findings too).
//
// Nothing is written for a session that fails verification: the error is
// then an *UnverifiedError naming the check.
func Export(ctx context.Context, l *ledger.Ledger, id uuid.UUID, f Format, w io.Writer) (gate bool, err error) {
	return ExportFor(ctx, l, id, f, w, nil)
}

// ExportFor is Export; for the certificate format, auditorNote (when not
// nil) is the auditor's checkpoint, and the certificate carries a
// consistency proof for it (BuildCertificateFor).
func ExportFor(ctx context.Context, l *ledger.Ledger, id uuid.UUID, f Format, w io.Writer, auditorNote []byte) (gate bool, err error) {
	return ExportWith(ctx, l, id, f, w, auditorNote, ReportOptions{})
}

// ExportWith is ExportFor; the formats rendered from a report add what opt
// supplies (the policy's name).
func ExportWith(ctx context.Context, l *ledger.Ledger, id uuid.UUID, f Format, w io.Writer, auditorNote []byte, opt ReportOptions) (gate bool, err error) {
	if _, err := ParseFormat(string(f)); err != nil {
		return false, fmt.Errorf("evidence: export: %w", err)
	}
	if auditorNote != nil && f != FormatCertificate {
		return false, fmt.Errorf("evidence: export: a checkpoint to prove consistency with applies to the certificate format only, not %s", f)
	}
	if f == FormatCertificate {
		data, findings, err := buildCertificateFor(ctx, l, id, auditorNote)
		if err != nil {
			return false, err
		}
		if _, err := w.Write(data); err != nil {
			return false, fmt.Errorf("evidence: write certificate: %w", err)
		}
		for _, fd := range findings {
			gate = gate || NeedsEvidence(fd.Severity)
		}
		return gate, nil
	}
	if _, err := ParseFormat(string(f)); err != nil {
		return false, fmt.Errorf("evidence: export: %w", err)
	}
	if err := verifyForExport(ctx, l, id); err != nil {
		return false, err
	}
	r, err := BuildReportWith(ctx, l, id, opt)
	if err != nil {
		return false, err
	}
	return r.Gate(), Render(r, f, w)
}

// writeJSON writes v indented, with a final newline. HTML characters are
// not escaped: the output is a file, not markup.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
