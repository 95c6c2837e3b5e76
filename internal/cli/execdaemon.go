package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/execclient"
	"github.com/ironvise/ironvise/internal/localsock"
	"github.com/ironvise/ironvise/internal/session"
)

// execViaDaemon ships o to `ironvise serve` when it answers on the data
// directory's socket (docs/operate/performance.md#daemon-path). handled is
// false when no daemon answers: the caller runs the command in-process.
// Once the request is sent, a failure is exec's aborted exit and nothing
// is run again here: the daemon may have started the command. exec's thin
// path (execclient.Thin) builds the request and renders the answer with
// the same functions.
func (a *app) execViaDaemon(o execOptions, res *resultOutput) (handled bool, err error) {
	cfg, err := a.config()
	if err != nil {
		return true, err
	}
	// The request carries a.sandboxEnv(): both are callerenv.Candidates
	// of a.lookup.
	req, err := execclient.NewRequest(o, a.lookup)
	if err != nil {
		return false, nil // the in-process path reports it
	}
	execclient.SetProgram(req, a.program())
	conn, err := execclient.Dial(a.ctx, cfg.DataDir)
	if err != nil {
		return false, nil
	}
	defer conn.Close()
	// The daemon renders --json and --quiet itself; when it wrote no
	// result (it refused the request, or the exchange failed), the result
	// is this process's to print.
	out := &writeSeen{w: a.stdout}
	code, msg := execclient.Exchange(a.ctx, conn, req, out, a.stderr)
	if code == 0 && msg == nil {
		err = nil
	} else {
		err = exitCode(code, msg)
	}
	if !out.seen {
		err = res.finish(a, err)
	} else if o.JSON {
		// The daemon's stdout was the result object: a failing exit must
		// not add a second JSON value after it.
		a.jsonWritten = true
	}
	return true, err
}

// writeSeen passes writes to w and notes whether any carried bytes.
type writeSeen struct {
	w    io.Writer
	seen bool
}

func (s *writeSeen) Write(p []byte) (int, error) {
	s.seen = s.seen || len(p) > 0
	return s.w.Write(p)
}

// daemonExec runs one exec request inside serve: the same rules and
// session code as an in-process exec, on serve's runtime, with the output
// and the exit collected for the client.
func (a *app) daemonExec(ctx context.Context, rt *session.Runtime, req *localsock.Request) *localsock.Response {
	if !filepath.IsAbs(req.Workspace) {
		return &localsock.Response{Code: ExitUsage, Error: "daemon: the request's workspace is not absolute", NotStarted: true}
	}
	res, err := resultOutputOf(req.Output)
	if err != nil {
		return &localsock.Response{Code: ExitUsage, Error: "daemon: " + err.Error(), NotStarted: true}
	}
	var out, errOut bytes.Buffer
	// protect is serve's list, read once at start and shared with its tier:
	// recomputing it per request would cost the stat walk again and could
	// let the tripwire and the tier disagree.
	d := &app{ctx: ctx, stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, lookup: a.lookup, cfg: a.cfg, timing: a.timing, protect: a.protect, daemonRequest: true, hintProgram: req.Program}
	env := map[string]string{}
	for _, kv := range req.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	run := *rt
	run.SandboxEnv = session.SandboxEnv(config.MapLookup(env))
	o := execOptions{Command: req.Command, Session: req.Session, Workspace: req.Workspace, Policy: req.Policy,
		PolicySHA256: req.PolicySHA256, Justification: req.Justification, WorkspaceMode: req.WorkspaceMode}
	err = res.finish(d, d.interruptedAsAborted(func() error {
		r, err := d.loadRules(o.Workspace, o.Policy, o.PolicySHA256)
		if err != nil {
			return err
		}
		return d.execSession(r, &run, o, res)
	}()))
	resp := &localsock.Response{}
	var ee *exitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		resp.Code = ee.code
		var v *verbatimError
		switch {
		case ee.err == nil:
		case errors.As(ee.err, &v):
			// The client rewrites the hints in Error (progname.Rewrite),
			// which would change the text this error quotes from the
			// user's file; the command's own stderr reaches the client
			// as written, so the message goes there.
			fmt.Fprintf(&errOut, "ironvise: %s\n", ee.err.Error())
		default:
			resp.Error = ee.err.Error()
		}
	default:
		resp.Code, resp.Error = ExitUsage, err.Error()
	}
	resp.Stdout, resp.Stderr = out.Bytes(), errOut.Bytes()
	return resp
}
