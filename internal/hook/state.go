package hook

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// State maps one agent session to its IronVise session. It lives in
// <data dir>/hooks/<agent>/<hash of the agent's session id>.json and is
// read and written only under the file's lock, so two hook processes of
// the same agent session (an agent runs matching hooks concurrently)
// never create two sessions or reuse a step number.
type State struct {
	Agent        Agent  `json:"agent"`
	AgentSession string `json:"agent_session_id"`
	// Session is the IronVise session id ("" before the first event that
	// needed one); Goal and Workspace are what it was created with.
	Session   string `json:"session_id"`
	Goal      string `json:"goal"`
	Workspace string `json:"workspace"`
	// Step is the last step number used.
	Step int `json:"step"`
	// Pending binds a tool call allowed before it ran to its committed
	// action, for the observation of its output (PostToolUse).
	Pending map[string]Pending `json:"pending"`
	// Halted names the observation rule that aborted the session: every
	// later call is blocked.
	Halted string `json:"halted,omitempty"`
	// Sealed is set once the session ended; the next event starts a new
	// one.
	Sealed bool `json:"sealed"`
}

// Pending is a committed action waiting for its output.
type Pending struct {
	Step      int    `json:"step"`
	ActionSeq uint64 `json:"action_seq"`
}

// maxPending bounds Pending: a tool call whose output never came (the
// user declined it, the agent crashed) must not grow the file forever.
const maxPending = 256

// Locked is a State held under its lock.
type Locked struct {
	State
	path string
	lock *os.File
}

// Lock opens the state of the agent session sid under dir (created 0700),
// waiting up to timeout for another hook process that holds it. The
// caller must Close it.
func Lock(dir string, a Agent, sid string, timeout time.Duration) (*Locked, error) {
	sum := sha256.Sum256([]byte(sid))
	d := filepath.Join(dir, string(a))
	if err := os.MkdirAll(d, 0o700); err != nil {
		return nil, fmt.Errorf("create the hook state directory %s: %w (check that the data directory is writable)", d, err)
	}
	base := filepath.Join(d, hex.EncodeToString(sum[:16]))
	f, err := os.OpenFile(base+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the hook lock %s: %w (check that the data directory is writable)", base+".lock", err)
	}
	if err := lockFile(f, timeout); err != nil {
		f.Close()
		return nil, err
	}
	l := &Locked{path: base + ".json", lock: f}
	b, err := os.ReadFile(l.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		l.State = State{Agent: a, AgentSession: sid}
	case err != nil:
		l.Close()
		return nil, fmt.Errorf("read the hook state %s: %w", l.path, err)
	default:
		if err := json.Unmarshal(b, &l.State); err != nil {
			l.Close()
			return nil, fmt.Errorf("the hook state %s is unreadable (%v); move it away to start a new IronVise session for this agent session", l.path, err)
		}
		if l.AgentSession != sid || l.Agent != a {
			l.Close()
			return nil, fmt.Errorf("the hook state %s belongs to another agent session; move it away", l.path)
		}
	}
	if l.Pending == nil {
		l.Pending = map[string]Pending{}
	}
	return l, nil
}

// Save writes the state atomically (a new file renamed over the old).
func (l *Locked) Save() error {
	for len(l.Pending) > maxPending {
		oldest, key := int(^uint(0)>>1), ""
		for k, p := range l.Pending {
			if p.Step < oldest || p.Step == oldest && k < key {
				oldest, key = p.Step, k
			}
		}
		delete(l.Pending, key)
	}
	b, err := json.MarshalIndent(l.State, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the hook state: %w", err)
	}
	tmp := l.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write the hook state %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, l.path); err != nil {
		return fmt.Errorf("write the hook state %s: %w", l.path, err)
	}
	return nil
}

// Close releases the lock.
func (l *Locked) Close() error {
	if l.lock == nil {
		return nil
	}
	err := l.lock.Close() // closing the descriptor drops the flock
	l.lock = nil
	return err
}
