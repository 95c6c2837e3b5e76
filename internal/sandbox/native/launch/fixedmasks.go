package launch

import (
	"os"
	"strings"
)

// maskedFiles are secrets readable under /etc by their owner. Landlock can
// only grant /etc as a whole, and a command running as uid 0 without
// capabilities still owns these files, so they are covered with /dev/null
// (files) or an empty read-only tmpfs (directories) in the command's mount
// namespace.
var maskedFiles = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/sudoers", "/etc/sudoers.d", "/etc/security/opasswd",
	"/etc/ssl/private", "/etc/krb5.keytab",
}

// hostKeys are the files whose names vary that are masked too: the SSH
// host private keys, /etc/ssh/ssh_host_*_key. (Matched by hand rather than
// with path/filepath.Glob: importing path/filepath would make Go initialise
// many unrelated packages of the ironvise binary before the launcher; see
// package early.)
func hostKeys() []string {
	const dir, prefix, suffix = "/etc/ssh", "ssh_host_", "_key"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil // no /etc/ssh: nothing to mask
	}
	var keys []string
	for _, e := range ents {
		n := e.Name()
		if len(n) >= len(prefix)+len(suffix) && strings.HasPrefix(n, prefix) && strings.HasSuffix(n, suffix) {
			keys = append(keys, dir+"/"+n)
		}
	}
	return keys
}

// FixedMasks are the paths every launcher masks whatever its
// specification (maskedFiles and the SSH host keys), for the tiers, which
// mask the other names mounts give them (package sandbox/mounts): the
// native tier in Spec.Hide, the container tier with its covering mounts.
func FixedMasks() []string {
	return append(append([]string(nil), maskedFiles...), hostKeys()...)
}
