package execclient

import (
	"context"
	"errors"
	"os"
	"syscall"

	"github.com/ironvise/ironvise/internal/localsock/wire"
)

// daemonPath: serve listens on Linux only (package localsock).
const daemonPath = true

// Dial connects to the daemon of dataDir. Any error means no daemon
// answers there (no socket, a stale one, no permission, a backlog still
// full after a second, or ctx already ended): the caller runs the command
// another way.
//
// It uses the socket system calls directly, not package net: see the
// package documentation for why the thin path avoids net.
func Dial(ctx context.Context, dataDir string) (*Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := wire.Path(dataDir)
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if err := connect(fd, p); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	// Non-blocking, so that the runtime's poller waits on it and Close
	// wakes a pending read (Ctrl-C).
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, os.NewSyscallError("setnonblock", err)
	}
	return &Conn{f: os.NewFile(uintptr(fd), p), path: p}, nil
}

// connect connects fd to the socket at p, waiting at most a second for
// room in a busy daemon's backlog (a blocking connect on a Unix socket
// waits for as long as the send timeout allows).
func connect(fd int, p string) error {
	tv := syscall.Timeval{Sec: 1}
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv); err != nil {
		return os.NewSyscallError("setsockopt", err)
	}
	for {
		err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: p})
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "connect", Path: p, Err: err}
		}
		break
	}
	tv = syscall.Timeval{}
	return os.NewSyscallError("setsockopt", syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv))
}
