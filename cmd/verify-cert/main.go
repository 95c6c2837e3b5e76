// Command verify-cert verifies an IronVise .elc audit certificate offline:
// it needs nothing but the certificate and the issuer's public key. It
// links no database driver and no HTTP stack and makes no network access,
// so an auditor can run it on an air-gapped machine.
//
// Usage:
//
//	verify-cert (--issuer-key KEY | --issuer-key-file FILE | --allow-unpinned) [--checkpoint FILE] [--json] [--max-bytes N] CERTIFICATE.elc
//
// It prints the five pillars of docs/design/ledger.md#evidence-exports
// (issuer signature; hash chain; event signatures and key rotations; Merkle
// inclusion in the signed checkpoint; goal/policy binding and findings
// evidence), and a sixth when the session's guard ran in an enclave (its
// attestation, docs/enclaves.md), and exits 0 when all hold, 1 when the certificate is invalid,
// unsigned or unreadable, and 2 on a usage error, including a missing pin.
// KEY is one of the forms `ironvise issuer-key` prints: 64 hex digits, a
// did:key or the checkpoint verifier key; --issuer-key never reads a file.
// FILE is the issuer key file: the whole output of `ironvise issuer-key`
// (redirected, or written with --output; --json too) or one form alone. Only with --allow-unpinned is a certificate checked against
// the key it names, which proves only that it is self-consistent.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/ironvise/ironvise/internal/evidence"
	"github.com/ironvise/ironvise/internal/jsonerror"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// once is a string flag that refuses to be given twice, so two
// contradictory keys cannot silently resolve to the last one.
type once struct {
	v   string
	set bool
}

func (o *once) String() string { return o.v }

func (o *once) Set(s string) error {
	if o.set {
		return errors.New("given more than once")
	}
	o.v, o.set = s, true
	return nil
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verify-cert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var key, keyFile, checkpoint once
	fs.Var(&key, "issuer-key", "the issuer public key to trust, as its value: hex, did:key or checkpoint verifier key (never a file name)")
	fs.Var(&keyFile, "issuer-key-file", "the issuer key file to trust: what 'ironvise issuer-key' prints or writes with --output")
	fs.Var(&checkpoint, "checkpoint", "a signed checkpoint you kept earlier ('ironvise checkpoint latest'): the certificate is valid only if its log is the same history")
	allowUnpinned := fs.Bool("allow-unpinned", false, "check a certificate against the key it names itself (proves self-consistency only)")
	asJSON := fs.Bool("json", false, "print machine-readable JSON")
	maxBytes := fs.Int("max-bytes", evidence.MaxCertificateBytes, fmt.Sprintf("refuse certificates larger than this many bytes (at most %d); raise it only for a large certificate from an issuer you trust", evidence.MaxCertificateBytesLimit))
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: verify-cert (--issuer-key KEY | --issuer-key-file FILE | --allow-unpinned) [--checkpoint FILE] [--json] CERTIFICATE.elc\n\n"+
			"Verifies an IronVise .elc audit certificate offline and prints its five pillars\n(six when the session's guard ran in an enclave: its attestation is verified too).\n"+
			"Exit status: 0 valid, 1 invalid, 2 usage error (including no pinned key).\n\n"+
			"example:\n  verify-cert --issuer-key-file issuer.pub audit.elc\n\nflags:\n")
		fs.PrintDefaults()
	}
	parsed := false
	// fail reports a failure that has no certificate result: on stderr,
	// and with --json as the one JSON value on stdout.
	fail := func(code int, kind string, err error) int {
		if _, printed := err.(quiet); !printed {
			fmt.Fprintf(stderr, "verify-cert: %v\n", err)
		}
		// A command-line error can stop parsing before --json.
		if (parsed && *asJSON) || (!parsed && jsonArg(args)) {
			jsonerror.Write(stdout, jsonerror.Failure{Command: "verify-cert", Error: jsonerror.Detail{Kind: kind, Code: code, Message: err.Error()}})
		}
		return code
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		// The flag package has printed the error and the usage.
		return fail(2, jsonerror.KindUsage, quiet{err})
	}
	parsed = true
	if fs.NArg() != 1 {
		fs.Usage()
		return fail(2, jsonerror.KindUsage, quiet{fmt.Errorf("want one certificate file, got %d arguments", fs.NArg())})
	}
	pin, err := evidence.ResolveIssuerPin(key.v, keyFile.v, *allowUnpinned)
	if err != nil {
		// Without a pin a self-made certificate verifies: exiting 0 would
		// let a CI step that only checks the exit status accept it.
		return fail(2, jsonerror.KindUsage, err)
	}
	if *maxBytes < 1 || *maxBytes > evidence.MaxCertificateBytesLimit {
		return fail(2, jsonerror.KindUsage, fmt.Errorf("--max-bytes %d: want 1 to %d", *maxBytes, evidence.MaxCertificateBytesLimit))
	}
	data, err := readFile(fs.Arg(0), *maxBytes)
	if err != nil {
		return fail(1, jsonerror.KindFailed, err)
	}
	opts := evidence.VerifyOptions{MaxBytes: *maxBytes}
	if checkpoint.set {
		if opts.Checkpoint, err = readFile(checkpoint.v, 64<<10); err != nil {
			return fail(2, jsonerror.KindError, fmt.Errorf("--checkpoint: %w", err))
		}
	}
	res, verr := evidence.VerifyCertificateWith(data, pin, opts)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res.JSON(1)); err != nil {
			fmt.Fprintf(stderr, "verify-cert: %v\n", err)
			return 2
		}
	} else if err := res.WriteText(stdout); err != nil {
		fmt.Fprintf(stderr, "verify-cert: %v\n", err)
		return 2
	}
	if verr != nil || !res.Valid {
		return 1
	}
	return 0
}

// quiet is an error already printed on stderr (by the flag package):
// fail puts it in the JSON object only.
type quiet struct{ error }

// jsonArg reports whether args ask for JSON (-json, --json, =true) before
// "--", for a command line that did not parse.
func jsonArg(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "json" {
			continue
		}
		if !hasValue {
			return true
		}
		v, err := strconv.ParseBool(value)
		return err == nil && v
	}
	return false
}

func readFile(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	// Read at most limit+1 bytes: a larger file is refused without being
	// held in memory.
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > limit {
		return nil, fmt.Errorf("read %s: larger than %d bytes (--max-bytes raises the limit for a large certificate from an issuer you trust)", path, limit)
	}
	return data, nil
}
