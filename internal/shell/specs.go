package shell

import "strings"

// The option specs of the programs that rules and wrappers look at, from
// their manual pages. A program without a spec is read with the generic
// model (see OptSpec). A spec only has to be complete where it is Strict;
// elsewhere a missing long option only costs an abbreviation.

var (
	specCurl = &OptSpec{
		ShortValue: "AbcCdDeEFHKmoPQrtTuUwxXyYz",
		LongValue: []string{"abstract-unix-socket", "alt-svc", "aws-sigv4", "cacert", "capath", "cert", "cert-type", "ciphers",
			"config", "connect-timeout", "connect-to", "continue-at", "cookie", "cookie-jar", "create-file-mode", "crlfile", "curves",
			"data", "data-ascii", "data-binary", "data-raw", "data-urlencode", "delegation", "dns-interface", "dns-ipv4-addr",
			"dns-ipv6-addr", "dns-servers", "doh-url", "dump-header", "ech", "egd-file", "engine", "etag-compare", "etag-save",
			"expect100-timeout", "form", "form-string", "ftp-account", "ftp-alternative-to-user", "ftp-method", "ftp-port",
			"ftp-ssl-ccc-mode", "happy-eyeballs-timeout-ms", "haproxy-clientip", "header", "hostpubmd5", "hostpubsha256", "hsts",
			"interface", "ip-tos", "ipfs-gateway", "json", "keepalive-time", "key", "key-type", "krb", "libcurl", "limit-rate",
			"local-port", "login-options", "mail-auth", "mail-from", "mail-rcpt", "max-filesize", "max-redirs", "max-time",
			"netrc-file", "noproxy", "oauth2-bearer", "output", "output-dir", "parallel-max", "pass", "pinnedpubkey", "preproxy",
			"proto", "proto-default", "proto-redir", "proxy", "proxy-cacert", "proxy-capath", "proxy-cert", "proxy-cert-type",
			"proxy-ciphers", "proxy-crlfile", "proxy-header", "proxy-key", "proxy-key-type", "proxy-pass", "proxy-pinnedpubkey",
			"proxy-service-name", "proxy-tls13-ciphers", "proxy-tlsauthtype", "proxy-tlspassword", "proxy-tlsuser", "proxy-user",
			"proxy1.0", "pubkey", "quote", "random-file", "range", "rate", "referer", "request", "request-target", "resolve",
			"retry", "retry-delay", "retry-max-time", "sasl-authzid", "service-name", "socks4", "socks4a", "socks5",
			"socks5-gssapi-service", "socks5-hostname", "speed-limit", "speed-time", "stderr", "telnet-option", "tftp-blksize",
			"time-cond", "tls-max", "tls13-ciphers", "tlsauthtype", "tlspassword", "tlsuser", "trace", "trace-ascii", "trace-config",
			"unix-socket", "upload-file", "url", "url-query", "user", "user-agent", "variable", "write-out"},
		LongFlags: []string{"remote-name", "remote-name-all", "silent", "show-error", "location", "fail", "insecure", "include",
			"head", "verbose", "compressed", "create-dirs", "get", "globoff", "next", "no-buffer", "progress-bar", "remote-time",
			"remote-header-name", "append", "list-only", "netrc", "netrc-optional", "junk-session-cookies", "ipv4", "ipv6",
			"http1.0", "http1.1", "http2", "http3", "ssl", "tlsv1", "fail-with-body", "digest", "basic", "ntlm", "anyauth"},
		// Older curl versions accept a unique prefix of a long option.
		Abbrev: true,
	}
	specWget = &OptSpec{
		ShortValue: "OoaeiBtTwQPlARDXIUY",
		LongValue: []string{"output-document", "output-file", "append-output", "execute", "input-file", "base", "tries", "timeout",
			"wait", "quota", "directory-prefix", "level", "accept", "reject", "domains", "exclude-domains", "exclude-directories",
			"include-directories", "user-agent", "header", "post-data", "post-file", "body-data", "body-file", "method",
			"load-cookies", "save-cookies", "user", "password", "http-user", "http-password", "ca-certificate", "certificate",
			"private-key", "config", "use-askpass", "bind-address", "limit-rate", "referer", "waitretry", "dns-timeout",
			"connect-timeout", "read-timeout", "restrict-file-names", "default-page", "cut-dirs", "accept-regex", "reject-regex"},
		LongFlags: []string{"quiet", "verbose", "no-verbose", "continue", "timestamping", "mirror", "recursive", "no-parent",
			"no-clobber", "no-directories", "force-directories", "page-requisites", "convert-links", "spider", "server-response",
			"no-check-certificate", "inet4-only", "inet6-only", "content-disposition", "ask-password", "show-progress"},
		Abbrev: true,
	}
	// specNetcat covers the traditional netcat, OpenBSD nc and ncat: a
	// letter that takes a value in any of them takes one here.
	specNetcat = &OptSpec{
		ShortValue: "ceGgiImMoOpPqsTVwxX",
		LongValue: []string{"exec", "sh-exec", "lua-exec", "output", "hex-dump", "idle-timeout", "source-port", "source", "wait",
			"delay", "proxy", "proxy-type", "proxy-auth", "allow", "allowfile", "deny", "denyfile", "max-conns", "ssl-cert",
			"ssl-key", "ssl-trustfile", "ssl-ciphers", "ssl-servername", "ssl-alpn"},
		LongFlags: []string{"listen", "udp", "sctp", "keep-open", "nodns", "send-only", "recv-only", "ssl", "verbose",
			"telnet", "crlf", "broker", "chat", "append-output", "version", "help"},
		Abbrev: true,
	}
	specTar = &OptSpec{
		ShortValue: "bCfFgHIKLNTVX",
		LongValue: []string{"file", "directory", "exclude", "files-from", "exclude-from", "format", "label", "transform", "xform",
			"owner", "group", "mode", "mtime", "newer", "newer-mtime", "after-date", "blocking-factor", "record-size",
			"tape-length", "starting-file", "listed-incremental", "index-file", "suffix", "sort", "quoting-style", "warning",
			"volno-file", "pax-option", "strip-components", "hole-detection", "level", "xattrs-include", "xattrs-exclude",
			"add-file", "checkpoint-action", "to-command", "use-compress-program", "rsh-command", "rmt-command", "info-script",
			"new-volume-script", "exclude-tag", "exclude-tag-all", "exclude-tag-under", "owner-map", "group-map"},
		LongOptional: []string{"checkpoint", "occurrence", "backup", "one-top-level", "atime-preserve"},
		LongFlags: []string{"extract", "get", "create", "list", "append", "update", "diff", "compare", "delete", "concatenate",
			"catenate", "gzip", "gunzip", "ungzip", "bzip2", "xz", "lzma", "lzip", "lzop", "zstd", "compress", "uncompress",
			"auto-compress", "verbose", "to-stdout", "keep-old-files", "keep-newer-files", "overwrite", "overwrite-dir",
			"preserve-permissions", "same-permissions", "no-same-owner", "same-owner", "numeric-owner", "dereference",
			"hard-dereference", "absolute-names", "wildcards", "no-wildcards", "anchored", "ignore-case", "totals", "recursion",
			"no-recursion", "null", "remove-files", "unlink-first", "recursive-unlink", "sparse", "multi-volume", "verify",
			"show-transformed-names", "utc", "full-time", "interactive", "confirmation", "skip-old-files", "touch", "xattrs",
			"acls", "selinux", "exclude-vcs", "exclude-vcs-ignores", "exclude-backups", "exclude-caches", "one-file-system",
			"ignore-failed-read", "ignore-zeros", "help", "version", "usage", "show-defaults"},
		Abbrev:   true,
		OldStyle: true,
	}
	specSort = &OptSpec{
		ShortValue: "kostST",
		LongValue: []string{"key", "output", "field-separator", "buffer-size", "temporary-directory", "compress-program",
			"files0-from", "random-source", "sort", "parallel", "batch-size"},
		LongFlags: []string{"ignore-leading-blanks", "dictionary-order", "ignore-case", "general-numeric-sort", "ignore-nonprinting",
			"month-sort", "human-numeric-sort", "numeric-sort", "random-sort", "reverse", "version-sort", "check", "merge",
			"stable", "unique", "zero-terminated", "debug", "help", "version"},
		Abbrev: true,
	}
	specSSH = &OptSpec{
		ShortValue: "BbcDEeFIiJLlmOopQRSWw",
		ShortFlags: "46AaCfGgKkMNnqsTtVvXxYy",
		InOrder:    true,
	}
	specSCP = &OptSpec{
		ShortValue: "cDFiJloPSX",
		ShortFlags: "346ABCOpqRrsTv",
	}
	specSFTP = &OptSpec{
		ShortValue: "BbcDFiJloPRSsX",
		ShortFlags: "46AaCfNpqrv",
	}
	specRsync = &OptSpec{
		ShortValue: "eBfT",
		LongValue: []string{"rsh", "rsync-path", "filter", "exclude", "include", "exclude-from", "include-from", "files-from",
			"temp-dir", "compare-dest", "copy-dest", "link-dest", "partial-dir", "backup-dir", "suffix", "chmod", "chown",
			"usermap", "groupmap", "log-file", "log-file-format", "out-format", "password-file", "port", "sockopts", "address",
			"bwlimit", "timeout", "contimeout", "max-size", "min-size", "max-delete", "modify-window", "block-size",
			"checksum-choice", "compress-choice", "compress-level", "skip-compress", "info", "debug", "stop-after", "stop-at",
			"iconv", "remote-option", "outbuf", "write-batch", "only-write-batch", "read-batch", "protocol", "checksum-seed",
			"max-alloc", "config", "dparam"},
	}
	specDate = &OptSpec{
		ShortValue:    "dfrs",
		ShortOptional: "I",
		LongValue:     []string{"date", "file", "reference", "set", "resolution"},
		LongOptional:  []string{"iso-8601", "rfc-3339"},
		LongFlags:     []string{"debug", "rfc-email", "utc", "universal", "help", "version"},
		Abbrev:        true,
	}
	specHostname = &OptSpec{
		ShortValue: "F",
		LongValue:  []string{"file"},
		LongFlags: []string{"boot", "alias", "domain", "fqdn", "long", "all-fqdns", "ip-address", "all-ip-addresses", "short",
			"yp", "nis", "help", "version"},
		Abbrev: true,
	}
	specRm = &OptSpec{
		LongOptional: []string{"interactive", "preserve-root"},
		LongFlags:    []string{"force", "one-file-system", "no-preserve-root", "recursive", "dir", "verbose", "help", "version"},
		Abbrev:       true,
	}
	specCp = &OptSpec{
		ShortValue:   "St",
		LongValue:    []string{"suffix", "target-directory"},
		LongOptional: []string{"backup", "preserve", "no-preserve", "reflink", "sparse", "update"},
		LongFlags: []string{"archive", "attributes-only", "copy-contents", "dereference", "force", "interactive", "link",
			"no-clobber", "no-dereference", "parents", "recursive", "remove-destination", "strip-trailing-slashes",
			"symbolic-link", "no-target-directory", "verbose", "one-file-system", "debug", "help", "version"},
		Abbrev: true,
	}
	specChmod = &OptSpec{
		LongValue: []string{"reference"},
		LongFlags: []string{"changes", "silent", "quiet", "verbose", "no-preserve-root", "preserve-root", "recursive", "help",
			"version"},
		Abbrev: true,
	}
	specSetfacl = &OptSpec{
		ShortValue: "mMxX",
		LongValue:  []string{"modify", "modify-file", "remove", "remove-file", "set", "set-file"},
		LongFlags: []string{"remove-all", "remove-default", "no-mask", "mask", "default", "restore", "test", "logical", "physical",
			"recursive", "version", "help"},
		Abbrev: true,
	}
	specSystemctl = &OptSpec{
		ShortValue: "HMnopst",
		LongValue: []string{"host", "machine", "lines", "output", "property", "signal", "type", "state", "job-mode", "kill-whom",
			"kill-value", "root", "image", "preset-mode", "message", "when", "timestamp", "what", "boot-loader-menu",
			"boot-loader-entry", "drop-in", "image-policy", "check-inhibitors"},
		LongFlags: []string{"now", "all", "recursive", "reverse", "after", "before", "failed", "user", "system", "global",
			"runtime", "force", "quiet", "no-block", "no-wall", "no-reload", "no-pager", "no-legend", "no-ask-password",
			"full", "show-types", "value", "wait", "firmware-setup", "dry-run", "marked", "read-only", "mkdir", "plain"},
		Abbrev: true,
	}
	specLoginctl = &OptSpec{
		ShortValue: "HMnopst",
		LongValue:  []string{"host", "machine", "lines", "output", "property", "signal", "kill-whom"},
		LongFlags:  []string{"all", "value", "full", "no-pager", "no-legend", "no-ask-password"},
		Abbrev:     true,
	}
	specPkill = &OptSpec{
		ShortValue: "dgGPsuUtFe",
		LongValue: []string{"delimiter", "pgroup", "group", "parent", "session", "euid", "uid", "terminal", "pidfile", "signal",
			"ns", "nslist", "cgroup", "env"},
		LongFlags: []string{"full", "ignore-case", "newest", "oldest", "exact", "inverse", "count", "echo", "list-name",
			"list-full", "lightweight", "logpidfile", "require-handler", "runstates", "help", "version"},
		NumericFlag: true,
		Abbrev:      true,
	}
	specKillall = &OptSpec{
		ShortValue: "sunoyZ",
		LongValue:  []string{"signal", "user", "older-than", "younger-than", "context", "ns"},
		LongFlags: []string{"exact", "ignore-case", "process-group", "interactive", "list", "quiet", "regexp", "verbose",
			"wait", "version"},
		NumericFlag: true,
		Abbrev:      true,
	}
	specTee = &OptSpec{
		LongOptional: []string{"output-error"},
		LongFlags:    []string{"append", "ignore-interrupts", "help", "version"},
		Abbrev:       true,
	}
	specCrontab = &OptSpec{ShortValue: "uTs", ShortFlags: "lreinV"}
	specAt      = &OptSpec{ShortValue: "qfMtdr", InOrder: false}
	specMake    = &OptSpec{
		ShortValue: "CfIjloOW",
		LongValue: []string{"directory", "file", "makefile", "include-dir", "jobs", "load-average", "max-load", "old-file",
			"assume-old", "what-if", "new-file", "assume-new", "output-sync", "eval", "debug", "jobserver-style", "shuffle"},
		Abbrev: true,
	}
	specDD     = &OptSpec{}
	specShred  = &OptSpec{ShortValue: "ns", LongValue: []string{"iterations", "random-source", "size"}, LongOptional: []string{"remove"}, Abbrev: true}
	specGitTop = &OptSpec{
		ShortValue: "Cc",
		ShortFlags: "pPhv",
		LongValue: []string{"git-dir", "work-tree", "namespace", "config-env", "super-prefix", "list-cmds", "attr-source",
			"exec-path"},
		LongFlags: []string{"paginate", "no-pager", "bare", "no-replace-objects", "literal-pathspecs", "glob-pathspecs",
			"noglob-pathspecs", "icase-pathspecs", "no-optional-locks", "html-path", "man-path", "info-path", "version", "help",
			"no-lazy-fetch", "no-advice"},
		InOrder: true,
	}
	specPython = &OptSpec{ShortValue: "cmWXQ", InOrder: true}
	specNode   = &OptSpec{
		ShortValue: "eprC",
		LongValue: []string{"eval", "print", "require", "import", "loader", "experimental-loader", "conditions", "input-type",
			"env-file", "title", "inspect-port", "stack-size", "max-old-space-size"},
		InOrder: true,
	}
	// npm's parser (nopt) takes the next word as the value of the options
	// that are typed as strings; these are the ones commonly written
	// before a subcommand.
	specNpm = &OptSpec{
		ShortValue: "wC",
		LongValue: []string{"prefix", "registry", "cache", "userconfig", "globalconfig", "loglevel", "workspace", "tag", "otp",
			"scope", "include", "omit", "before", "location", "install-strategy", "node-options", "script-shell", "user-agent"},
	}
	// sqlmap (Python optparse) accepts unique prefixes of long options:
	// --os-sh is --os-shell.
	specSqlmap = &OptSpec{
		ShortValue: "udlmrgcpDTCXUHAvtszx",
		LongValue: []string{"url", "data", "cookie", "level", "risk", "dbms", "dbms-cred", "technique", "tamper", "os", "sql-query",
			"sql-file", "file-read", "file-write", "file-dest", "os-cmd", "reg-key", "reg-value", "reg-data", "reg-type",
			"dump-format", "delay", "timeout", "retries", "threads", "proxy", "headers", "user-agent", "referer", "method",
			"param-del", "cookie-del", "auth-type", "auth-cred", "string", "not-string", "regexp", "code", "prefix", "suffix",
			"where", "start", "stop", "first", "last", "msf-path", "tmp-path", "shared-lib", "csv-del", "output-dir", "crawl",
			"dns-domain", "second-url", "union-cols", "union-char", "time-sec", "pivot-column", "search", "host", "csrf-token"},
		LongFlags: []string{"dbs", "dump", "dump-all", "os-shell", "os-pwn", "os-smbrelay", "os-bof", "sql-shell", "passwords",
			"users", "tables", "columns", "schema", "count", "banner", "current-user", "current-db", "hostname", "is-dba",
			"privileges", "roles", "comments", "statements", "all", "batch", "flush-session", "fresh-queries", "forms",
			"random-agent", "tor", "check-tor", "priv-esc", "udf-inject", "reg-read", "reg-add", "reg-del", "exclude-sysdbs",
			"common-tables", "common-columns", "common-files", "text-only", "titles", "hex", "smart", "skip-waf",
			"drop-set-cookie", "disable-coloring", "dependencies", "version", "help", "wizard", "answers", "parse-errors"},
		Abbrev: true,
	}
	// openssl's options take one dash and their value as the next word.
	specOpenSSL = &OptSpec{
		OneDashLong: true,
		LongValue: []string{"in", "out", "inform", "outform", "key", "keyout", "keyform", "config", "passin", "passout", "CAfile",
			"CApath", "cert", "certfile", "connect", "servername", "subj", "days", "newkey", "name", "engine", "pass", "inkey",
			"signkey", "extfile", "extensions", "reqexts", "set_serial", "CA", "CAkey", "CAform", "CAkeyform", "host", "port",
			"proxy", "verify", "cipher", "ciphersuites", "curves", "starttls", "rand", "writerand", "md", "sigopt", "pkeyopt",
			"nameopt", "certopt", "checkhost", "checkemail", "checkip", "purpose", "iter", "kdf", "macopt", "digest"},
	}
	specPip = &OptSpec{
		LongValue: []string{"log", "proxy", "retries", "timeout", "exists-action", "trusted-host", "cert", "client-cert",
			"cache-dir", "python", "index-url", "extra-index-url", "find-links", "constraint", "requirement", "target", "root",
			"prefix", "src", "upgrade-strategy", "platform", "python-version", "implementation", "abi", "progress-bar"},
		ShortValue: "crtei",
	}
)

// specs maps a program to its option spec (lowercase: callers fold).
var specs = map[string]*OptSpec{
	"curl": specCurl, "wget": specWget, "nc": specNetcat, "ncat": specNetcat, "netcat": specNetcat, "nc.openbsd": specNetcat,
	"nc.traditional": specNetcat, "tar": specTar, "gtar": specTar, "bsdtar": specTar, "sort": specSort, "ssh": specSSH,
	"scp": specSCP, "sftp": specSFTP, "rsync": specRsync, "date": specDate, "hostname": specHostname, "rm": specRm,
	"cp": specCp, "mv": specCp, "install": specCp, "ln": specCp, "chmod": specChmod, "setfacl": specSetfacl,
	"systemctl": specSystemctl, "loginctl": specLoginctl, "pkill": specPkill, "pgrep": specPkill, "killall": specKillall,
	"tee": specTee, "crontab": specCrontab, "at": specAt, "batch": specAt, "make": specMake, "gmake": specMake, "dd": specDD,
	"shred": specShred, "git": specGitTop, "node": specNode, "nodejs": specNode, "npm": specNpm, "pip": specPip,
	"pip3": specPip, "sqlmap": specSqlmap, "openssl": specOpenSSL,
}

// SpecFor returns the option spec of a program (nil: the generic model).
// Versioned names share their base program's spec: python3.12 is python.
func SpecFor(program string) *OptSpec {
	p := strings.ToLower(program)
	if s, ok := specs[p]; ok {
		return s
	}
	switch {
	case strings.HasPrefix(p, "python"):
		return specPython
	case strings.HasPrefix(p, "pip"):
		return specPip
	}
	return nil
}
