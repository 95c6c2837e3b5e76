package native

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
)

// seatbeltReadRoots are the system locations a macOS command may read:
// libraries, frameworks, the dyld cache, the usual program directories and
// Homebrew (whose git, unlike Xcode's shim, runs under the profile).
var seatbeltReadRoots = []string{
	"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/libexec", "/usr/share", "/usr/local",
	"/opt/homebrew", "/System", "/Library/Apple", "/Library/Frameworks",
	"/private/var/db/dyld", "/private/var/db/timezone", "/private/etc",
	// /bin/sh on macOS is a stub that runs the shell this names.
	"/private/var/select",
}

// seatbeltDevices are the device files a command may open for reading;
// /dev/null is also writable.
var seatbeltDevices = []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/dtracehelper"}

// SeatbeltProfile returns the Seatbelt (SBPL) profile of the macOS tier
// (docs/design/sandbox.md#macos-tier) for a resolved, absolute workspace and
// scratch directory and the protected paths to deny inside them
// (Options.Hidden, resolved), and its SHA-256. Paths are quoted as SBPL
// string literals; a path with a control character is refused.
//
// The profile denies by default; allows reading system libraries and
// frameworks; reading and writing the workspace and the scratch directory;
// stat (not listing) of the workspace's parent folders; process-exec and
// process-fork (commands are limited by the tripwire and the executable
// allowlist); signals only within the sandbox; and nothing on the network.
func SeatbeltProfile(workspace, scratch string, hidden []string) (profile, sum string, err error) {
	for _, p := range append([]string{workspace, scratch}, hidden...) {
		if !path.IsAbs(p) || path.Clean(p) != p {
			return "", "", fmt.Errorf("seatbelt: path %q is not absolute and clean", p)
		}
		if strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return "", "", fmt.Errorf("seatbelt: path %q contains a control character", p)
		}
	}
	var b strings.Builder
	w := func(s string) { b.WriteString(s); b.WriteByte('\n') }
	w("(version 1)")
	// Security: everything not allowed below is denied, network included.
	w("(deny default)")
	w("(allow process-exec)")
	w("(allow process-fork)")
	// Security: signals only to processes of this sandbox, never to
	// IronVise or the user's other processes.
	w("(allow signal (target same-sandbox))")
	w("(allow sysctl-read)")
	w(`(allow mach-lookup (global-name "com.apple.system.logger") (global-name "com.apple.system.notification_center"))`)
	w("(allow file-read*")
	for _, r := range seatbeltReadRoots {
		w("  (subpath " + sbplString(r) + ")")
	}
	for _, d := range seatbeltDevices {
		w("  (literal " + sbplString(d) + ")")
	}
	w(")")
	w("(allow file-write-data (literal \"/dev/null\"))")
	w("(allow file-ioctl (literal \"/dev/null\"))")
	// The workspace and the scratch directory: read and write.
	w("(allow file-read* file-write* (subpath " + sbplString(workspace) + ") (subpath " + sbplString(scratch) + "))")
	// stat, not listing, of the parents, so that tools resolving the
	// current directory (getcwd, realpath) work while `ls ..` is refused.
	var parents []string
	for d := path.Dir(workspace); ; d = path.Dir(d) {
		parents = append(parents, d)
		if d == "/" {
			break
		}
	}
	for d := path.Dir(scratch); ; d = path.Dir(d) {
		parents = append(parents, d)
		if d == "/" {
			break
		}
	}
	b.WriteString("(allow file-read-metadata")
	seen := map[string]bool{}
	for _, d := range parents {
		if !seen[d] {
			seen[d] = true
			b.WriteString(" (literal " + sbplString(d) + ")")
		}
	}
	w(")")
	w("(deny network*)")
	// Security: the protected paths (IronVise's data directory, ~/.ssh,
	// ~/.aws, …) are denied last, so that they win over the workspace's
	// grant: a home directory as workspace must not hand out the issuer
	// key or the user's credentials. Seatbelt applies the last matching
	// rule.
	if len(hidden) > 0 {
		b.WriteString("(deny file-read* file-write*")
		for _, h := range hidden {
			b.WriteString(" (subpath " + sbplString(h) + ")")
		}
		w(")")
	}
	profile = b.String()
	h := sha256.Sum256([]byte(profile))
	return profile, hex.EncodeToString(h[:]), nil
}

// sbplString quotes s as an SBPL string literal.
func sbplString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
