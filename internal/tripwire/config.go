package tripwire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ironvise/ironvise/internal/secretpaths"
	"github.com/ironvise/ironvise/internal/shell"
	"github.com/ironvise/ironvise/internal/strictjson"
)

// Config is tripwire.json (docs/design/checks.md#tripwire-json), validated.
// Build one with LoadConfig or DefaultConfig; the zero value is not usable.
type Config struct {
	AllowedRoots         []string
	WritableRoots        []string
	AllowedDomains       []string
	AllowedIPRanges      []netip.Prefix
	RequireHTTPS         bool
	MaxRedirects         int
	MinJustification     int
	ExecutableAllowlist  []string // nil = off
	AllowDynamicPrograms bool
	BannedPrograms       []string
	BannedArgRules       []ArgRule
	// ProtectedPaths are the operator's additions to the protected-path
	// list ("protected_paths"): absolute or ~/-relative. The composition
	// root merges them into the list it passes as Options.Protected.
	ProtectedPaths []secretpaths.Entry
	// SHA256 is the hex SHA-256 of the file bytes, or of the canonical JSON
	// of the defaults when no file exists; recorded at session start.
	SHA256 string

	// Compiled at load so that no glob is expanded per step.
	banned    shell.GlobSet
	allowlist shell.GlobSet
}

// Default lists of docs/design/checks.md#executable-allowlist,
// docs/design/checks.md#banned-programs and
// docs/design/checks.md#banned-arguments.
var (
	// DefaultAllowlist is the executable allowlist selected by "default".
	DefaultAllowlist = []string{"ls", "cat", "head", "tail", "wc", "grep", "find", "stat", "file", "diff", "cmp", "md5sum", "sha1sum", "sha256sum",
		"sha512sum", "sort", "uniq", "cut", "tr", "ps", "date", "id", "hostname", "uname", "df", "du", "which", "whoami", "basename",
		"dirname", "realpath", "readlink", "ss", "netstat", "lsof", "curl"}
	// AlwaysPermitted are builtins that an active allowlist never blocks.
	// command and hash are here because `command -v x` and `hash x` only
	// look a name up; a program that `command x` runs is checked itself.
	AlwaysPermitted = []string{"cd", ":", "true", "false", "test", "[", "echo", "printf", "pwd", "read", "set", "shift", "unset", "export",
		"readonly", "local", "return", "exit", "break", "continue", "wait", "umask", "getopts", "type", "ulimit", "command", "hash"}
	// DefaultBannedPrograms deny cmd_banned_program.
	DefaultBannedPrograms = []string{"sudo", "su", "doas", "pkexec", "runuser", "shutdown", "reboot", "halt", "poweroff", "telinit", "kexec", "mkfs*",
		"mke2fs", "mkswap", "fdisk", "sfdisk", "parted", "wipefs", "insmod", "rmmod", "modprobe", "mount", "umount", "chroot",
		"nsenter", "unshare", "passwd", "chpasswd", "useradd", "userdel", "usermod", "visudo", "sudoedit", "blkdiscard", "sgdisk",
		"gdisk", "cgdisk", "killall5"}
	// EnvOverrideNames may not be assigned (cmd_env_override). GCONV_PATH
	// makes glibc load a module of its choosing; GIT_EXEC_PATH and
	// GIT_TEMPLATE_DIR make git run programs and hooks from a directory.
	EnvOverrideNames = []string{"PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH", "IFS", "ENV",
		"BASH_ENV", "PS4", "PROMPT_COMMAND", "GCONV_PATH", "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR"}
)

// Limits on tripwire.json values.
const (
	MaxConfigBytes    = 1 << 20
	maxConfigDepth    = 16
	maxMinJustify     = 1000
	maxMaxRedirects   = 10
	defaultRedirects  = 5
	defaultMinJustify = 5
)

// ConfigError lists every problem of a tripwire.json, one per line as
// "tripwire.json: <json path>: <problem>".
type ConfigError struct{ Problems []string }

// Error implements error.
func (e *ConfigError) Error() string { return strings.Join(e.Problems, "\n") }

// LoadOptions are the inputs of LoadConfig besides the file.
type LoadOptions struct {
	// Workspace is the session workspace, absolute and symlink-resolved:
	// the default allowed root.
	Workspace string
	// EnvDomains is AGENT_ALLOWED_DOMAINS when set (EnvDomainsSet).
	EnvDomains    []string
	EnvDomainsSet bool
	// Warn receives non-fatal notes (the variable ignored when the file
	// sets allowed_domains).
	Warn func(msg string)
}

// DefaultConfig returns the configuration used when no tripwire.json
// exists.
func DefaultConfig(opt LoadOptions) (*Config, error) {
	return LoadConfigBytes(nil, opt)
}

// LoadConfig reads dataDir/tripwire.json; a missing file means the
// defaults. An empty or malformed file is an error, never a fallback.
func LoadConfig(path string, opt LoadOptions) (*Config, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return LoadConfigBytes(nil, opt)
	}
	if err != nil {
		return nil, fmt.Errorf("tripwire.json: read %s: %w", path, err)
	}
	if len(b) == 0 {
		return nil, &ConfigError{[]string{"tripwire.json: $: file is empty (delete it to use the defaults)"}}
	}
	return LoadConfigBytes(b, opt)
}

// LoadConfigBytes validates tripwire.json content; nil data means the
// defaults.
func LoadConfigBytes(data []byte, opt LoadOptions) (*Config, error) {
	l := &loader{opt: opt}
	var root *strictjson.Node
	if data != nil {
		if len(data) > MaxConfigBytes {
			return nil, &ConfigError{[]string{fmt.Sprintf("tripwire.json: $: file is %d bytes (max %d)", len(data), MaxConfigBytes)}}
		}
		l.cache = fileRules{sum: sha256.Sum256(data), set: true}
		var err error
		root, err = strictjson.Decode(data, maxConfigDepth)
		if err != nil {
			return nil, &ConfigError{[]string{"tripwire.json: " + err.Error()}}
		}
		if root.Kind != strictjson.Object {
			return nil, &ConfigError{[]string{"tripwire.json: $: expected object, got " + root.Kind.String()}}
		}
	} else {
		root = &strictjson.Node{Kind: strictjson.Object}
	}
	c := l.build(root)
	if len(l.problems) > 0 {
		return nil, &ConfigError{l.problems}
	}
	if data != nil {
		c.SHA256 = hex.EncodeToString(l.cache.sum[:])
	} else {
		c.SHA256 = cachedDefaultsHash(opt, c)
	}
	return c, nil
}

// defaultsHashes remembers defaultsHash's answers. The defaults differ
// only by what LoadOptions brings in — the workspace (resolved into the
// roots) and AGENT_ALLOWED_DOMAINS — and encoding them to JSON for the
// hash was about 0.2 ms of every command's start in serve
// (docs/operate/performance.md). The key holds each option and each value
// derived from one; TestDefaultsHashKey fails when LoadOptions gains a
// field the key does not hold.
var defaultsHashes struct {
	mu sync.Mutex
	m  map[string]string
}

// maxDefaultsHashes bounds the memo: a daemon serving more workspaces
// than this starts it over.
const maxDefaultsHashes = 64

// cachedDefaultsHash is defaultsHash(c) for the defaults loaded with opt.
func cachedDefaultsHash(opt LoadOptions, c *Config) string {
	key := defaultsHashKey(opt, c)
	defaultsHashes.mu.Lock()
	defer defaultsHashes.mu.Unlock()
	if h, ok := defaultsHashes.m[key]; ok {
		return h
	}
	if defaultsHashes.m == nil || len(defaultsHashes.m) >= maxDefaultsHashes {
		defaultsHashes.m = make(map[string]string, maxDefaultsHashes)
	}
	h := defaultsHash(c)
	defaultsHashes.m[key] = h
	return h
}

// defaultsHashKey writes each input of the defaults length-prefixed, so
// that no two inputs share a key.
func defaultsHashKey(opt LoadOptions, c *Config) string {
	var b []byte
	str := func(s string) {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, ':')
		b = append(b, s...)
	}
	list := func(l []string) {
		b = strconv.AppendInt(b, int64(len(l)), 10)
		b = append(b, '[')
		for _, s := range l {
			str(s)
		}
	}
	str(opt.Workspace)
	list(opt.EnvDomains)
	b = strconv.AppendBool(b, opt.EnvDomainsSet)
	list(c.AllowedRoots)
	list(c.WritableRoots)
	list(c.AllowedDomains)
	return string(b)
}

// defaultsHash hashes the canonical JSON of the effective defaults
// (docs/design/checks.md#tripwire-json). Keys are sorted by encoding a map,
// output has no insignificant whitespace and HTML escaping is off, which is
// RFC 8785 for these values (plain strings, booleans, small integers).
func defaultsHash(c *Config) string {
	rules := make([]argRuleSrc, len(c.BannedArgRules))
	for i, r := range c.BannedArgRules {
		rules[i] = r.src
	}
	protected := make([]string, len(c.ProtectedPaths))
	for i, e := range c.ProtectedPaths {
		protected[i] = e.String()
	}
	ranges := make([]string, len(c.AllowedIPRanges))
	for i, p := range c.AllowedIPRanges {
		ranges[i] = p.String()
	}
	m := map[string]any{
		"version": 1, "allowed_roots": nonNil(c.AllowedRoots), "writable_roots": nonNil(c.WritableRoots),
		"allowed_domains": nonNil(c.AllowedDomains), "allowed_ip_ranges": ranges, "require_https": c.RequireHTTPS,
		"max_redirects": c.MaxRedirects, "min_justification_length": c.MinJustification,
		"executable_allowlist": c.ExecutableAllowlist, "allow_dynamic_programs": c.AllowDynamicPrograms,
		"banned_programs": nonNil(c.BannedPrograms), "extra_banned_programs": []string{},
		"banned_arg_rules": rules, "extra_banned_arg_rules": []argRuleSrc{},
		"protected_paths": protected,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(m) // plain values: cannot fail
	sum := sha256.Sum256(bytes.TrimRight(buf.Bytes(), "\n"))
	return hex.EncodeToString(sum[:])
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// loader collects every problem of one file.
type loader struct {
	opt      LoadOptions
	problems []string
	// cache finds the arg rules of a file loaded before (fileRules).
	cache fileRules
}

// fileRules finds the compiled arg rules of a file this process loaded
// before. serve loads tripwire.json for every exec request; compiling its
// rules again each time would cost more than the rest of the request's
// checks. The key is the SHA-256 of the file's exact bytes and the
// member's name, so any change to the file is compiled afresh; a time
// stamp would miss a change made within its resolution. Only a list
// without problems is kept: a bad file reports its problems every time.
// Lists are copied in and out, as a Config's fields are its owner's to
// change.
type fileRules struct {
	sum [32]byte
	set bool // false for the defaults (no file)
}

// maxCachedRuleLists bounds the cache; a daemon sees one file or a few.
const maxCachedRuleLists = 16

type fileRulesKey struct {
	sum    [32]byte
	member string
}

var cachedRules struct {
	sync.Mutex
	m map[fileRulesKey][]ArgRule
}

func (f fileRules) get(member string) ([]ArgRule, bool) {
	if !f.set {
		return nil, false
	}
	cachedRules.Lock()
	defer cachedRules.Unlock()
	r, ok := cachedRules.m[fileRulesKey{f.sum, member}]
	return slices.Clone(r), ok
}

func (f fileRules) put(member string, rules []ArgRule) {
	if !f.set {
		return
	}
	cachedRules.Lock()
	defer cachedRules.Unlock()
	if cachedRules.m == nil || len(cachedRules.m) >= maxCachedRuleLists {
		cachedRules.m = map[fileRulesKey][]ArgRule{}
	}
	cachedRules.m[fileRulesKey{f.sum, member}] = slices.Clone(rules)
}

func (l *loader) fail(path, format string, args ...any) {
	l.problems = append(l.problems, "tripwire.json: "+path+": "+fmt.Sprintf(format, args...))
}

var configKeys = []string{"version", "allowed_roots", "writable_roots", "allowed_domains", "allowed_ip_ranges", "require_https",
	"max_redirects", "min_justification_length", "executable_allowlist", "allow_dynamic_programs", "banned_programs",
	"extra_banned_programs", "banned_arg_rules", "extra_banned_arg_rules", "protected_paths"}

func (l *loader) build(root *strictjson.Node) *Config {
	c := &Config{RequireHTTPS: true, MaxRedirects: defaultRedirects, MinJustification: defaultMinJustify}
	for _, k := range root.Keys {
		if !slices.Contains(configKeys, k) {
			l.fail(strictjson.Child("$", k), "unknown key (allowed: %s)", strings.Join(configKeys, ", "))
		}
	}
	if n := root.Get("version"); n != nil {
		if n.Kind != strictjson.Number || string(n.Num) != "1" {
			l.fail("$.version", "must be 1")
		}
	}
	c.AllowedRoots = l.roots(root, "allowed_roots", []string{l.opt.Workspace})
	c.WritableRoots = l.roots(root, "writable_roots", nil)
	c.AllowedDomains = l.domains(root)
	c.AllowedIPRanges = l.cidrs(root, "allowed_ip_ranges")
	c.RequireHTTPS = l.boolean(root, "require_https", true)
	c.AllowDynamicPrograms = l.boolean(root, "allow_dynamic_programs", false)
	c.MaxRedirects = l.intRange(root, "max_redirects", defaultRedirects, 0, maxMaxRedirects)
	c.MinJustification = l.intRange(root, "min_justification_length", defaultMinJustify, 0, maxMinJustify)
	c.ExecutableAllowlist = l.allowlist(root)
	c.BannedPrograms = l.globs(root, "banned_programs", DefaultBannedPrograms)
	c.BannedPrograms = append(c.BannedPrograms, l.globs(root, "extra_banned_programs", nil)...)
	c.BannedArgRules = l.argRules(root, "banned_arg_rules", defaultArgRules)
	c.BannedArgRules = append(c.BannedArgRules, l.argRules(root, "extra_banned_arg_rules", nil)...)
	c.ProtectedPaths = l.protectedPaths(root)
	// The lists were validated entry by entry above; a failure here would
	// only repeat those problems.
	c.banned, _ = shell.CompileGlobs(c.BannedPrograms)
	if c.ExecutableAllowlist != nil {
		c.allowlist, _ = shell.CompileGlobs(c.ExecutableAllowlist)
	}
	return c
}

func (l *loader) stringList(root *strictjson.Node, key string) ([]string, bool) {
	n := root.Get(key)
	if n == nil {
		return nil, false
	}
	path := "$." + key
	if n.Kind != strictjson.Array {
		l.fail(path, "expected array of strings, got %s", n.Kind)
		return nil, true
	}
	out := make([]string, 0, len(n.Elems))
	for i, e := range n.Elems {
		if e.Kind != strictjson.String {
			l.fail(strictjson.Index(path, i), "expected string, got %s", e.Kind)
			continue
		}
		out = append(out, e.Str)
	}
	return out, true
}

func (l *loader) boolean(root *strictjson.Node, key string, def bool) bool {
	n := root.Get(key)
	if n == nil {
		return def
	}
	if n.Kind != strictjson.Bool {
		l.fail("$."+key, "expected boolean, got %s", n.Kind)
		return def
	}
	return n.Str == "true"
}

func (l *loader) intRange(root *strictjson.Node, key string, def, lo, hi int) int {
	n := root.Get(key)
	if n == nil {
		return def
	}
	var v int
	if n.Kind != strictjson.Number {
		l.fail("$."+key, "expected integer, got %s", n.Kind)
		return def
	}
	if _, err := fmt.Sscanf(string(n.Num), "%d", &v); err != nil || fmt.Sprint(v) != string(n.Num) || v < lo || v > hi {
		l.fail("$."+key, "must be an integer from %d to %d (got %s)", lo, hi, n.Num)
		return def
	}
	return v
}

// roots validates absolute, existing directories and resolves them once,
// at load (docs/design/checks.md#tripwire-paths step 5).
func (l *loader) roots(root *strictjson.Node, key string, def []string) []string {
	list, set := l.stringList(root, key)
	if !set {
		list = def
	}
	out := make([]string, 0, len(list))
	for i, r := range list {
		path := strictjson.Index("$."+key, i)
		if r == "" {
			if !set {
				continue // no workspace given: no default root
			}
			l.fail(path, "empty root")
			continue
		}
		if !filepath.IsAbs(r) {
			l.fail(path, "%q is not an absolute path", r)
			continue
		}
		res, err := filepath.EvalSymlinks(r)
		if err != nil {
			l.fail(path, "%q does not exist or cannot be resolved: %v", r, err)
			continue
		}
		out = append(out, filepath.Clean(res))
	}
	return out
}

// protectedPaths validates protected_paths entry by entry; each error names
// the entry's position and what is accepted.
func (l *loader) protectedPaths(root *strictjson.Node) []secretpaths.Entry {
	list, _ := l.stringList(root, "protected_paths")
	out := make([]secretpaths.Entry, 0, len(list))
	for i, s := range list {
		e, err := secretpaths.ParseEntry(s)
		if err != nil {
			l.fail(strictjson.Index("$.protected_paths", i), "%s", strings.TrimPrefix(err.Error(), secretpaths.ErrEntry.Error()+": "))
			continue
		}
		out = append(out, e)
	}
	return out
}

func (l *loader) domains(root *strictjson.Node) []string {
	list, set := l.stringList(root, "allowed_domains")
	where := func(i int) string { return strictjson.Index("$.allowed_domains", i) }
	if l.opt.EnvDomainsSet {
		if set {
			if l.opt.Warn != nil {
				l.opt.Warn("AGENT_ALLOWED_DOMAINS is ignored: tripwire.json sets allowed_domains")
			}
		} else {
			list = l.opt.EnvDomains
			where = func(int) string { return "AGENT_ALLOWED_DOMAINS" }
		}
	}
	out := make([]string, 0, len(list))
	for i, d := range list {
		norm, err := normalizeDomain(d)
		if err != nil {
			if where(i) == "AGENT_ALLOWED_DOMAINS" {
				l.problems = append(l.problems, fmt.Sprintf("AGENT_ALLOWED_DOMAINS=%q: %v (accepted: comma-separated host names such as example.com)", d, err))
				continue
			}
			l.fail(where(i), "%v", err)
			continue
		}
		out = append(out, norm)
	}
	return out
}

// normalizeDomain validates an allowlist entry: a bare host name, no
// scheme, port, path, wildcard or leading dot; lowercased and IDNA-encoded
// like the hosts it is compared with.
func normalizeDomain(d string) (string, error) {
	switch {
	case d == "":
		return "", errors.New("empty domain")
	case strings.Contains(d, "://"):
		return "", fmt.Errorf("%q has a scheme", d)
	case strings.ContainsAny(d, "/?#"):
		return "", fmt.Errorf("%q has a path", d)
	case strings.Contains(d, "*"):
		return "", fmt.Errorf("%q has a wildcard (a domain already allows its subdomains)", d)
	case strings.HasPrefix(d, "."):
		return "", fmt.Errorf("%q has a leading dot", d)
	case strings.Contains(d, ":"):
		return "", fmt.Errorf("%q has a port", d)
	case strings.ContainsAny(d, " \t@"):
		return "", fmt.Errorf("%q is not a host name", d)
	}
	h, err := NormalizeHost(d)
	if err != nil {
		return "", fmt.Errorf("%q: %v", d, err)
	}
	return h, nil
}

func (l *loader) cidrs(root *strictjson.Node, key string) []netip.Prefix {
	list, _ := l.stringList(root, key)
	out := make([]netip.Prefix, 0, len(list))
	for i, s := range list {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			l.fail(strictjson.Index("$."+key, i), "bad CIDR %q: %v", s, err)
			continue
		}
		out = append(out, p.Masked())
	}
	return out
}

func (l *loader) allowlist(root *strictjson.Node) []string {
	n := root.Get("executable_allowlist")
	if n == nil || n.Kind == strictjson.Null {
		return nil
	}
	if n.Kind == strictjson.String {
		if n.Str != "default" {
			l.fail("$.executable_allowlist", `expected null, "default" or an array of globs, got %q`, n.Str)
			return nil
		}
		return append([]string(nil), DefaultAllowlist...)
	}
	if n.Kind != strictjson.Array {
		l.fail("$.executable_allowlist", `expected null, "default" or an array of globs, got %s`, n.Kind)
		return nil
	}
	out := l.globs(root, "executable_allowlist", nil)
	if out == nil {
		out = []string{} // an empty allowlist is active and allows only builtins
	}
	return out
}

func (l *loader) globs(root *strictjson.Node, key string, def []string) []string {
	list, set := l.stringList(root, key)
	if !set {
		return append([]string(nil), def...)
	}
	for i, g := range list {
		if err := shell.ValidGlob(g); err != nil {
			l.fail(strictjson.Index("$."+key, i), "%v", err)
		}
	}
	return list
}
