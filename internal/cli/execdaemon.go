package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/localsock"
	"github.com/ironvise/ironvise/internal/session"
)

// execViaDaemon ships o to `ironvise serve` when it answers on the data
// directory's socket (docs/operate/performance.md#daemon-path). handled is
// false when no daemon answers: the caller runs the command in-process.
// Once the request is sent, a failure is exec's aborted exit and nothing
// is run again here: the daemon may have started the command.
func (a *app) execViaDaemon(o execOptions) (handled bool, err error) {
	cfg, err := a.config()
	if err != nil {
		return true, err
	}
	req, err := a.execRequest(o)
	if err != nil {
		return false, nil // the in-process path reports it
	}
	conn, err := localsock.Dial(a.ctx, cfg.DataDir)
	if err != nil {
		return false, nil
	}
	defer conn.Close()
	// Ctrl-C hangs up; the daemon then stops the command and records the
	// session aborted, as an interrupted in-process exec does.
	stop := context.AfterFunc(a.ctx, func() { conn.Close() })
	defer stop()
	resp, err := localsock.Call(conn, req)
	if err != nil {
		if a.ctx.Err() != nil {
			return true, exitCode(ExitExecAborted, fmt.Errorf("interrupted: %v; the daemon was told to stop the command", a.ctx.Err()))
		}
		return true, exitCode(ExitExecAborted, fmt.Errorf("the daemon at %s failed mid-request (%v); the command may have run, so it is not run again (see 'ironvise sessions')", localsock.Path(cfg.DataDir), err))
	}
	a.stdout.Write(resp.Stdout)
	a.stderr.Write(resp.Stderr)
	var msg error
	if resp.Error != "" {
		msg = errors.New(resp.Error)
	}
	if resp.Code == 0 && msg == nil {
		return true, nil
	}
	return true, exitCode(resp.Code, msg)
}

// execRequest is o as the daemon needs it: the workspace and a policy
// file resolved against this process's working directory, and this
// process's candidate sandbox environment (the command runs with the
// caller's allowlisted variables either way). The configuration itself is
// the daemon's: it serves the same data directory.
func (a *app) execRequest(o execOptions) (*localsock.Request, error) {
	ws := o.workspace
	if ws == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		ws = wd
	}
	ws, err := filepath.Abs(ws)
	if err != nil {
		return nil, err
	}
	pol := o.policy
	if _, err := os.Stat(pol); pol != "" && (err == nil || strings.ContainsRune(pol, filepath.Separator)) {
		if pol, err = filepath.Abs(pol); err != nil {
			return nil, err
		}
	}
	return &localsock.Request{
		Command: o.command, Session: o.session, Workspace: ws, Policy: pol, PolicySHA256: o.policyPin,
		Justification: o.justification, Env: a.sandboxEnv(),
	}, nil
}

// daemonExec runs one exec request inside serve: the same rules and
// session code as an in-process exec, on serve's runtime, with the output
// and the exit collected for the client.
func (a *app) daemonExec(ctx context.Context, rt *session.Runtime, req *localsock.Request) *localsock.Response {
	if !filepath.IsAbs(req.Workspace) {
		return &localsock.Response{Code: ExitUsage, Error: "daemon: the request's workspace is not absolute", NotStarted: true}
	}
	var out, errOut bytes.Buffer
	// protect is serve's list, read once at start and shared with its tier:
	// recomputing it per request would cost the stat walk again and could
	// let the tripwire and the tier disagree.
	d := &app{ctx: ctx, stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, lookup: a.lookup, cfg: a.cfg, timing: a.timing, protect: a.protect}
	env := map[string]string{}
	for _, kv := range req.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	run := *rt
	run.SandboxEnv = session.SandboxEnv(config.MapLookup(env))
	o := execOptions{command: req.Command, session: req.Session, workspace: req.Workspace, policy: req.Policy,
		policyPin: req.PolicySHA256, justification: req.Justification}
	err := d.interruptedAsAborted(func() error {
		r, err := d.loadRules(o.workspace, o.policy, o.policyPin)
		if err != nil {
			return err
		}
		return d.execSession(r, &run, o)
	}())
	resp := &localsock.Response{Stdout: out.Bytes(), Stderr: errOut.Bytes()}
	var ee *exitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		resp.Code = ee.code
		if ee.err != nil {
			resp.Error = ee.err.Error()
		}
	default:
		resp.Code, resp.Error = ExitUsage, err.Error()
	}
	return resp
}
