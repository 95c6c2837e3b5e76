package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/ironvise/ironvise/internal/check"
)

// terminalApprover asks the operator on the terminal
// (docs/design/checks.md#approval-gates, CLI --interactive): the request goes
// to stderr with a countdown, one line is read from stdin, and y or yes
// approves. Anything else, EOF or a read error rejects; no answer before the
// gate's timeout resolves as a timeout.
type terminalApprover struct {
	out io.Writer
	tty bool
	// lines delivers stdin lines from the one reader goroutine, which owns
	// stdin for the life of the command and ends at EOF.
	lines <-chan lineOrErr
	once  sync.Once
	in    io.Reader
	ch    chan lineOrErr
}

type lineOrErr struct {
	line string
	err  error
}

func newTerminalApprover(in io.Reader, out io.Writer, tty bool) *terminalApprover {
	return &terminalApprover{in: in, out: out, tty: tty}
}

func (t *terminalApprover) start() {
	t.once.Do(func() {
		t.ch = make(chan lineOrErr)
		t.lines = t.ch
		go func() {
			// A read from a terminal cannot be cancelled; this goroutine
			// ends at EOF or when the process exits.
			r := bufio.NewReader(t.in)
			for {
				s, err := r.ReadString('\n')
				if err != nil && s == "" {
					t.ch <- lineOrErr{err: err}
					close(t.ch)
					return
				}
				t.ch <- lineOrErr{line: s}
			}
		}()
	})
}

// Decide implements check.Approver.
func (t *terminalApprover) Decide(ctx context.Context, req check.ApprovalRequest) check.ApprovalDecision {
	t.start()
	fmt.Fprintf(t.out, "\n── approval required (step %d) ──\n  %s %s\n  gates: %s\n", req.Step, req.ActionName, req.ActionParamsSummary, strings.Join(req.Gates, ", "))
	for _, r := range req.Reasons {
		if r != "" {
			fmt.Fprintf(t.out, "  reason: %s\n", r)
		}
	}
	timeout := time.Duration(req.TimeoutSeconds) * time.Second
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	left := req.TimeoutSeconds
	prompt := func() {
		if t.tty {
			fmt.Fprintf(t.out, "\r  approve? [y/N] (%s on timeout in %3ds): ", req.OnTimeout, left)
		}
	}
	if !t.tty {
		fmt.Fprintf(t.out, "  approve? [y/N] (%s on timeout in %ds): ", req.OnTimeout, left)
	}
	prompt()
	timedOut := func(by string) check.ApprovalDecision {
		fmt.Fprintln(t.out, "\n  no answer: "+req.OnTimeout)
		return check.ApprovalDecision{Approved: req.OnTimeout == "allow", DecidedBy: by, TimedOut: true}
	}
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(t.out, "\n  interrupted: rejected")
			r := check.DecidedByCLI + ": interrupted"
			return check.ApprovalDecision{Approved: false, DecidedBy: check.DecidedByCLI, Reason: &r}
		case <-deadline.C:
			return timedOut(check.DecidedByTimeout)
		case <-tick.C:
			left--
			prompt()
		case l, ok := <-t.lines:
			if !ok || l.err != nil {
				fmt.Fprintln(t.out, "\n  no input: rejected")
				return check.ApprovalDecision{Approved: false, DecidedBy: check.DecidedByCLI}
			}
			ans := strings.ToLower(strings.TrimSpace(l.line))
			ok = ans == "y" || ans == "yes"
			fmt.Fprintf(t.out, "\n  %s by the operator\n", map[bool]string{true: "approved", false: "rejected"}[ok])
			return check.ApprovalDecision{Approved: ok, DecidedBy: check.DecidedByCLI}
		}
	}
}
