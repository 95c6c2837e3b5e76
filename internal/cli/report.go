package cli

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/evidence"
	"github.com/ironvise/ironvise/internal/jsonerror"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/policy"
)

func (a *app) reportCommand() *cobra.Command {
	var format, output, checkpoint string
	cmd := &cobra.Command{
		Use:   "report <session-id>",
		Short: "Export a session's evidence: JSON, SARIF, HTML, .elc certificate, GitHub Actions, GitLab Code Quality",
		Long: `Writes the evidence of one session (docs/evidence.md) in one of six formats:

  json                session, findings, verdict summary and chain status (default)
  sarif               SARIF 2.1.0: findings and denials as results (GitHub code scanning)
  html                a self-contained human report (no external resources): the
                      session with its policy name and issuer key id, the executed
                      actions, findings and denials
  certificate         the .elc audit certificate, signed by the issuer key; verify it
                      anywhere with 'ironvise verify-certificate' or 'verify-cert'
  github_actions      workflow commands (::error / ::warning / ::notice)
  gitlab_codequality  GitLab Code Quality JSON

The session is verified first (the checks of 'ironvise verify-session'); when
any check fails nothing is written and the error names the check.

Exit status: 1 when any finding is high or critical (a CI gate), 0 otherwise,
2 on an error (unknown session, unknown format, unreadable ledger, a session
that fails verification). The file is written even when the gate fails.`,
		Example: `  ironvise report 0190f1c2-7a3b-7cde-8f01-23456789abcd
  ironvise report 0190f1c2-7a3b-7cde-8f01-23456789abcd --format sarif --output ironvise.sarif
  ironvise report 0190f1c2-7a3b-7cde-8f01-23456789abcd --format certificate --output audit.elc
  ironvise report "$SESSION" --format github_actions   # in a GitHub workflow step`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseSessionID(args[0])
			if err != nil {
				return exitCode(ExitUsage, err)
			}
			f, err := evidence.ParseFormat(format)
			if err != nil {
				return exitCode(ExitUsage, fmt.Errorf("--format: %w", err))
			}
			l, err := a.openLedger()
			if err != nil {
				return err
			}
			defer closeLedger(l)
			var note []byte
			if checkpoint != "" {
				if note, err = readBounded(checkpoint, 64<<10); err != nil {
					return exitCode(ExitUsage, fmt.Errorf("--checkpoint: %w", err))
				}
			}
			var buf bytes.Buffer
			gate, err := evidence.ExportWith(a.ctx, l, id, f, &buf, note, a.reportOptions())
			if errors.Is(err, ledger.ErrNotFound) {
				return exitCode(ExitUsage, fmt.Errorf("session %s is not in this ledger (check DATABASE_URL and ECTO_DATA_DIR; 'ironvise sessions' lists what is there)", id))
			}
			if err != nil {
				return exitCode(ExitUsage, err)
			}
			if err := writeOutput(a.stdout, output, buf.Bytes()); err != nil {
				return exitCode(ExitUsage, err)
			}
			if output != "" {
				fmt.Fprintf(a.stderr, "ironvise: wrote %s report of session %s to %s\n", f, id, output)
			}
			if gate {
				fmt.Fprintf(a.stderr, "ironvise: session %s has high or critical findings (exit 1)\n", id)
				return exitCode(ExitDenied, nil)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "json", "json, sarif, html, certificate, github_actions or gitlab_codequality")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file instead of standard output")
	cmd.Flags().StringVar(&checkpoint, "checkpoint", "", "certificate format: an auditor's checkpoint (from 'ironvise checkpoint latest') to include a consistency proof for")
	return cmd
}

// reportOptions names a session's policy after the shipped pack or
// data-directory policy whose bytes have the hash the session recorded
// (the ledger keeps only the hash).
func (a *app) reportOptions() evidence.ReportOptions {
	return evidence.ReportOptions{PolicyName: func(hash string) string {
		cfg, err := a.config()
		if err != nil {
			return ""
		}
		entries, _ := policy.List(cfg.DataDir)
		for _, e := range entries {
			if e.Err == nil && e.SHA256 == hash {
				return e.Name
			}
		}
		return ""
	}}
}

// writeOutput writes data to path atomically (temporary file, then
// rename), or to w when path is empty.
func writeOutput(w io.Writer, path string, data []byte) error {
	if path == "" {
		_, err := w.Write(data)
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// pinFlags are the issuer key flags of the offline verifiers.
type pinFlags struct {
	key, file     string
	allowUnpinned bool
}

func (p *pinFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&p.key, "issuer-key", "", "the issuer public key to trust, as its value: hex, did:key or checkpoint verifier key (never a file name)")
	cmd.Flags().StringVar(&p.file, "issuer-key-file", "", "the issuer key file to trust: what 'ironvise issuer-key' prints or writes with --output")
	cmd.Flags().BoolVar(&p.allowUnpinned, "allow-unpinned", false, "check against the key the document names itself (proves self-consistency only)")
}

// resolve returns the pinned key; a missing pin is a usage error (exit 2)
// unless --allow-unpinned was given, so a CI step that checks only the
// exit status never accepts a self-made document.
func (p *pinFlags) resolve() (ed25519.PublicKey, error) {
	k, err := evidence.ResolveIssuerPin(p.key, p.file, p.allowUnpinned)
	if err != nil {
		return nil, usageError(err)
	}
	return k, nil
}

func (a *app) verifyCertificateCommand() *cobra.Command {
	var pf pinFlags
	var asJSON bool
	var maxBytes int
	var checkpoint string
	cmd := &cobra.Command{
		Use:   "verify-certificate FILE",
		Short: "Verify an .elc audit certificate offline: five pillars (six with a guard enclave), each reported",
		Long: `Verifies an .elc certificate without any database or network, and reports
five pillars separately (docs/evidence.md):

  1. issuer signature            the certificate is signed by the issuer key
  2. hash chain                  every event hash recomputes from its bytes and
                                 links to the previous one; the seal commits to the tip
  3. event signatures, rotations every event is signed by the session key valid at
                                 its sequence; rotations by the previous key
  4. Merkle inclusion            every event is in the signed checkpoint's tree
  5. goal/policy binding and     the goal and policy hash are those the chain started
     findings evidence           with; high and critical findings cite observations
                                 of the session whose text contains their quotes
  6. guard enclave attestation   only when the session's guard ran in an enclave
                                 (docs/enclaves.md): a remote enclave's AWS Nitro
                                 attestation verified again against the pinned AWS
                                 root at its own time, with the recorded nonce, key
                                 and pinned PCRs; a software enclave's measurement
                                 checked for completeness

A certificate with any failing pillar is invalid, and so is an unsigned one.
Pin the issuer with --issuer-key (hex, did:key or the checkpoint verifier key
that 'ironvise issuer-key' prints; never read as a file name) or with
--issuer-key-file FILE (what 'ironvise issuer-key --output FILE' writes, or
its output redirected to a file). Without a pin the command refuses (exit 2): anyone can
make a self-consistent certificate under a key of their own. --allow-unpinned
checks self-consistency only.

Exit status: 0 valid, 1 invalid or unreadable, 2 usage error (including no pin).`,
		Example: `  ironvise verify-certificate audit.elc --issuer-key c3b1e7c2b912306bdab7689d88a4b5ec421860c5f896a438ec6356f66c2b843e
  ironvise verify-certificate audit.elc --issuer-key-file issuer.pub --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pin, err := pf.resolve()
			if err != nil {
				return err
			}
			if maxBytes < 1 || maxBytes > evidence.MaxCertificateBytesLimit {
				return usageError(fmt.Errorf("--max-bytes %d: want 1 to %d", maxBytes, evidence.MaxCertificateBytesLimit))
			}
			data, err := readBounded(args[0], int64(maxBytes))
			if err != nil {
				return exitCode(ExitDenied, err)
			}
			opts := evidence.VerifyOptions{MaxBytes: maxBytes}
			if checkpoint != "" {
				if opts.Checkpoint, err = readBounded(checkpoint, 64<<10); err != nil {
					return exitCode(ExitUsage, fmt.Errorf("--checkpoint: %w", err))
				}
			}
			res, verr := evidence.VerifyCertificateWith(data, pin, opts)
			if asJSON {
				if err := a.printJSON(res.JSON(ExitDenied)); err != nil {
					return exitCode(ExitUsage, err)
				}
			} else if err := res.WriteText(a.stdout); err != nil {
				return exitCode(ExitUsage, err)
			}
			if verr != nil || !res.Valid {
				return exitCode(ExitDenied, nil)
			}
			return nil
		},
	}
	pf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print machine-readable JSON")
	cmd.Flags().StringVar(&checkpoint, "checkpoint", "", "a checkpoint you kept ('ironvise checkpoint latest'): the certificate is valid only if its log is the same history")
	cmd.Flags().IntVar(&maxBytes, "max-bytes", evidence.MaxCertificateBytes, "refuse certificates larger than this many bytes; raise it only for a large certificate from an issuer you trust")
	return cmd
}

// readBounded reads a file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("read %s: larger than %d bytes (--max-bytes raises the limit for a large certificate from an issuer you trust)", path, limit)
	}
	return data, nil
}

func (a *app) verifyVCCommand() *cobra.Command {
	var pf pinFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify-vc FILE|JWT",
		Short: "Verify a session's verifiable credential (VC-JWT, EdDSA)",
		Long: `Verifies a W3C verifiable credential in the JWT encoding, as IronVise issues
when a session completes: the EdDSA signature by the issuer's did:key, the
validity window and the credential's shape. The argument is the JWT itself or
a file holding it (for instance the vc_jwt of GET /api/sessions/{id}/vc).

Pin the issuer with --issuer-key (the key's value) or --issuer-key-file FILE
(what 'ironvise issuer-key --output FILE' writes).
Without a pin the command refuses (exit 2); --allow-unpinned takes the key
from the credential's own did:key, which proves only self-consistency.

Exit status: 0 valid, 1 invalid, 2 usage error (including no pin).`,
		Example: `  ironvise verify-vc session.jwt --issuer-key did:key:z6Mk…
  ironvise verify-vc "$(curl -s -H "Authorization: Bearer $TOKEN" localhost:3000/api/sessions/$ID/vc | jq -r .vc_jwt)"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pin, err := pf.resolve()
			if err != nil {
				return err
			}
			jwt := args[0]
			if st, err := os.Stat(jwt); err == nil && st.Mode().IsRegular() {
				data, err := readBounded(jwt, evidence.MaxVCBytes)
				if err != nil {
					return exitCode(ExitUsage, err)
				}
				jwt = string(data)
			} else if strings.Count(jwt, ".") != 2 {
				return usageError(fmt.Errorf("%q is neither a JWT (header.payload.signature) nor a readable file", jwt))
			}
			c, err := evidence.VerifyVC(jwt, pin)
			if asJSON {
				out := vcJSON{OK: err == nil, Valid: err == nil}
				if err != nil {
					out.Reason = err.Error()
					out.Error = &jsonerror.Detail{Kind: jsonerror.KindVerification, Code: ExitDenied, Message: err.Error()}
				} else {
					out.Claims = c
				}
				a.printJSON(out)
			}
			if err != nil {
				if !asJSON {
					fmt.Fprintf(a.stdout, "credential INVALID: %v\n", err)
				}
				return exitCode(ExitDenied, nil)
			}
			if !asJSON {
				s := c.VC.Subject
				pinned := "issuer key pinned"
				if pin == nil {
					pinned = "issuer key NOT pinned: pass --issuer-key or --issuer-key-file to check who issued it"
				}
				fmt.Fprintf(a.stdout, "credential valid: session %s (%s), issued by %s (%s)\n", s.SessionID, s.Status, c.Issuer, pinned)
				fmt.Fprintf(a.stdout, "  goal hash    %s\n  policy hash  %s\n  tip          seq %d, %s\n  checkpoint   %s size %d, root %s\n",
					s.GoalHash, derefOr(s.PolicyHash, "none"), s.TipSequence, s.TipHash, s.Checkpoint.Origin, s.Checkpoint.TreeSize, s.Checkpoint.RootHash)
			}
			return nil
		},
	}
	pf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print machine-readable JSON")
	return cmd
}

// vcJSON is the --json output of verify-vc; error is the object every
// failing --json command prints (docs/cli.md#json-output).
type vcJSON struct {
	OK     bool              `json:"ok"`
	Valid  bool              `json:"valid"`
	Reason string            `json:"reason,omitempty"`
	Claims any               `json:"claims,omitempty"`
	Error  *jsonerror.Detail `json:"error,omitempty"`
}

func derefOr(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}
