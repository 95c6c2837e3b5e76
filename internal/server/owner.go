package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
)

// The owner identity of a serve process (issue 13, item 4). Sessions are
// leased to an owner id (docs/design/ledger.md#session-lifecycle). With a
// fresh id per process, a serve restarted after kill -9 could not tell its
// dead predecessor's sessions from another live instance's: they stayed
// running, answering 409 "driven by another instance", until the lease lapsed
// and some later start recovered them. Each data directory therefore keeps
// one owner id (the file ownerFile), and a lock on lockFile, held by the
// kernel for as long as the process lives, makes sure that one live process
// at a time uses it: the next serve on the directory takes the lock only once
// the previous one is gone, and may then treat every session of that id as
// its own (Server.reclaim).
const (
	ownerFile = "serve-owner-id"
	lockFile  = "serve.lock"
)

// errOwnerLocked reports that another live process holds the data
// directory's owner id.
var errOwnerLocked = errors.New("server: another serve process holds this data directory's owner id")

// ownerLock is the held lock of a data directory's owner id.
type ownerLock struct {
	id string
	f  *os.File
}

// acquireOwner takes the data directory's owner id: it creates the id on
// first use and locks it for this process. It returns errOwnerLocked when
// another live process holds it, and a wrapped errors.ErrUnsupported where
// the OS offers no lock that dies with its process (the caller then uses a
// per-process id).
func acquireOwner(dataDir string) (*ownerLock, error) {
	// serve may be the first command run on a data directory: it is
	// created here as the ledger would create it (private to the user).
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("server: create the data directory %s: %w", dataDir, err)
	}
	f, err := os.OpenFile(filepath.Join(dataDir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("server: open %s: %w", lockFile, err)
	}
	if err := lockFileExclusive(f); err != nil {
		f.Close()
		return nil, err
	}
	id, err := readOrCreateOwnerID(filepath.Join(dataDir, ownerFile))
	if err != nil {
		f.Close()
		return nil, err
	}
	host, _ := os.Hostname()
	return &ownerLock{id: host + "/serve/" + id, f: f}, nil
}

// release gives the lock back (the kernel also does when the process
// dies).
func (o *ownerLock) release() {
	if o != nil && o.f != nil {
		o.f.Close()
	}
}

func readOrCreateOwnerID(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		id := strings.TrimSpace(string(b))
		if _, perr := uuid.Parse(id); perr != nil {
			return "", fmt.Errorf("server: %s does not hold an owner id (%q); delete it and restart (sessions it left running are then recovered once their lease lapses)", path, id)
		}
		return id, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("server: read %s: %w", path, err)
	}
	id := uuid.NewString()
	if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("server: write %s: %w", path, err)
	}
	return id, nil
}
