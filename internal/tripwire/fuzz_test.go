package tripwire

import (
	"context"
	"net/netip"
	"testing"

	"github.com/ironvise/ironvise/internal/verdict"
)

// The fuzz targets assert that no input panics and that every verdict is
// well formed: a tripwire verdict that is either a plain allow or a deny
// with a code and a message.
func wellFormed(t *testing.T, v verdict.Verdict) {
	t.Helper()
	if v.Check != verdict.CheckTripwire || v.Code == "" || v.Message == "" {
		t.Fatalf("malformed verdict %+v", v)
	}
	if (v.Decision == verdict.Allow) != (v.Code == verdict.OK) {
		t.Fatalf("decision %s with code %s", v.Decision, v.Code)
	}
}

func FuzzCommand(f *testing.F) {
	for _, s := range []string{
		"ls -la",                             // plain command
		`"su""do" ls`,                        // split quotes
		"sh -c 'sudo ls'",                    // nested script
		`find . -exec sudo rm {} \;`,         // find -exec
		"f(){ f|f& };f",                      // recursive function
		"cat <<EOF\n$(id)\nEOF",              // heredoc substitution
		`echo > "$TMPDIR/a" 2>&1`,            // scratch target
		"x=$((1+$(id)))",                     // arithmetic with substitution
		"env -u A B=c timeout 1 xargs sh",    // wrapper chain
		"case $x in a) ls;; esac",            // case clause
		"for PATH in a; do :; done",          // loop variable
		"echo 'unterminated",                 // parse error
		"curl -sSo/tmp/x -Ff=@y https://x",   // clusters with attached values
		"echo x | xargs -I{} sh -c '{} a'",   // a hole in an inline script
		"find / -exec rm -rf {} +",           // {} replaced by the starting points
		"git -c core.pager='sudo id' log",    // a setting that runs a command
		"ssh -o 'ProxyCommand x' h ls -l",    // ssh options before and after the host
		": ${LD_PRELOAD:=x} $((IFS=1))",      // assignments by expansions
		"a(){ b|b& }; b(){ a|a& }; a",        // a forking call cycle
		"printf x > $TMPDIR/s; sh $TMPDIR/s", // a script written, then run
		"tar xIsh -f a.tar --to-com=sh",      // old-style cluster and an abbreviation
	} {
		f.Add(s)
	}
	ws := workspace(f)
	tw := setup(f, ws, nil)
	f.Fuzz(func(t *testing.T, cmd string) {
		wellFormed(t, check(t, tw, rc(cmd)))
	})
}

func FuzzPath(f *testing.F) {
	for _, s := range []string{
		"notes.txt",                  // plain relative
		"../../etc/passwd",           // traversal
		"link",                       // symlink out
		"/proc/self/root/etc/passwd", // magic link
		"a..b.txt",                   // dots inside a name
		"x:y",                        // ADS
		"~/x",                        // tilde
		"sub/./../sub//x.txt",        // mixed components
		"/",                          // root
	} {
		f.Add(s)
	}
	ws := workspace(f)
	tw := setup(f, ws, nil)
	f.Fuzz(func(t *testing.T, p string) {
		v := check(t, tw, rf(p))
		wellFormed(t, v)
		if v.Decision == verdict.Allow {
			// An allowed path must resolve inside the workspace.
			pv := tw.View(context.Background(), rf(p)).Paths[0]
			if !tw.within(pv.Resolved, ws) {
				t.Fatalf("allowed %q resolves to %q outside %q", p, pv.Resolved, ws)
			}
		}
	})
}

func FuzzURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/",           // allowed
		"https://a@example.com/",         // userinfo
		"https://example.com.evil.io/",   // suffix trick
		"https://0x7f.1/",                // legacy IP
		"https://[::ffff:10.0.0.1]/",     // mapped IPv6
		"https://xn--e1awd7f.com/",       // punycode
		"https://EXAMPLE.com.:443/a?b#c", // case, dot, port
		"https://[fe80::1%25lo]/",        // zone
	} {
		f.Add(s)
	}
	ws := workspace(f)
	tw := setup(f, ws, nil)
	f.Fuzz(func(t *testing.T, u string) {
		v := check(t, tw, hg(u))
		wellFormed(t, v)
		if v.Decision == verdict.Allow {
			view := tw.View(context.Background(), hg(u)).URL
			if !tw.domainAllowed(view.Host) {
				t.Fatalf("allowed %q with host %q outside allowed_domains", u, view.Host)
			}
		}
	})
}

func FuzzEmbedded(f *testing.F) {
	for _, s := range []string{
		"64:ff9b:1::a9fe:a9fe",                 // RFC 8215 local-use, /96 layout
		"64:ff9b:1:a9fe:a9:fe00::",             // RFC 8215 local-use, /48 layout
		"2002:a9fe:a9fe::",                     // 6to4
		"2001:0:4136:e378:8000:63bf:5601:5601", // Teredo, inverted client
		"::ffff:0:a9fe:a9fe",                   // SIIT
		"::a9fe:a9fe",                          // IPv4-compatible
		"2606:4700::5efe:a9fe:a9fe",            // ISATAP
		"10.0.0.1",                             // IPv4 itself
	} {
		b := netip.MustParseAddr(s).As16()
		f.Add(b[:])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) != 16 {
			return
		}
		a := netip.AddrFrom16([16]byte(b))
		got := Embedded(a)
		if len(got) == 0 || got[len(got)-1] != a.Unmap() {
			t.Fatalf("Embedded(%s) = %v: the address itself must come last", a, got)
		}
		for _, e := range got[:len(got)-1] {
			if !e.Is4() {
				t.Fatalf("Embedded(%s) = %v: %s is not IPv4", a, got, e)
			}
			// An address carried inside is in a range whenever the range
			// test is asked about the carrier.
			if !InRanges(a, []netip.Prefix{netip.PrefixFrom(e, 32)}) {
				t.Fatalf("InRanges(%s, %s/32) = false", a, e)
			}
		}
	})
}

func FuzzConfig(f *testing.F) {
	for _, s := range []string{
		`{}`, // defaults
		`{"version":1,"allowed_domains":["example.com"],"executable_allowlist":"default"}`,       // typical
		`{"extra_banned_arg_rules":[{"id":"x","program":"rm","require":["-r"],"except":"-rf"}]}`, // custom rule
		`{"max_redirects":1e1}`,                        // number form
		`{"banned_programs":[],"allowed_roots":["/"]}`, // permissive lists
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := LoadConfigBytes(data, LoadOptions{Workspace: "/"})
		if err == nil && (cfg.SHA256 == "" || cfg.MaxRedirects < 0 || cfg.MaxRedirects > 10) {
			t.Fatalf("accepted invalid config %+v", cfg)
		}
	})
}
