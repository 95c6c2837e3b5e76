// Package pidone lets IronVise be the first process of a container.
//
// The first process of a PID namespace (pid 1) inherits every orphan of the
// namespace: a process whose parent exited is re-parented to it, and when it
// exits it stays a zombie until pid 1 waits for it. A zombie holds a slot of
// the container's pids limit and of its user's RLIMIT_NPROC until then. The
// Go runtime cannot wait for processes it did not start without taking exit
// statuses that os/exec waits for, so IronVise does not reap in its own
// process: as pid 1 it starts itself again as its only child and becomes a
// small init that reaps every orphan, passes the signals it receives on to
// that child, and exits with the child's status.
//
// Orphans reach pid 1 in a container whenever a process started with
// `podman exec` or `docker exec` leaves children behind (its parent is the
// runtime's monitor outside the namespace, so its orphans skip it), and
// whenever a sandbox's reaper dies before it has reaped every process of its
// command.
package pidone
