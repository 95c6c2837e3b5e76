package webhook_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/ironvise/ironvise/internal/webhook"
)

// dnsServer is a real DNS server on loopback UDP that answers every A
// query with one address: a public-looking name that resolves to a
// private address, as an attacker's DNS would (rebinding).
func dnsServer(t *testing.T, answer netip.Addr) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
			b.StartQuestions()
			b.Question(q)
			b.StartAnswers()
			if q.Type == dnsmessage.TypeA {
				b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}, dnsmessage.AResource{A: answer.As4()})
			}
			msg, err := b.Finish()
			if err == nil {
				pc.WriteTo(msg, from)
			}
		}
	}()
	addr := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", addr)
	}}
}

func TestPrivateTargetsRefused(t *testing.T) {
	for _, u := range []string{
		"http://127.0.0.1:9/x", "http://localhost/x", "http://siem.internal/x", "http://[::1]/x", "http://10.0.0.5/x",
		"http://169.254.169.254/latest/meta-data/", "http://[::ffff:127.0.0.1]/x", "http://100.100.100.200/", "http://[64:ff9b::a00:1]/",
	} {
		if _, err := webhook.New(webhook.Options{Targets: []webhook.Target{{URL: u}}}); !errors.Is(err, webhook.ErrPrivateTarget) {
			t.Errorf("%s: %v", u, err)
		}
		if err := webhook.ValidateURL(context.Background(), u, false, nil); !errors.Is(err, webhook.ErrPrivateTarget) {
			t.Errorf("ValidateURL(%s): %v", u, err)
		}
		if err := webhook.ValidateURL(context.Background(), u, true, nil); err != nil {
			t.Errorf("allowed private %s: %v", u, err)
		}
	}
	for _, u := range []string{"ftp://siem.example.com/", "https://user:pw@siem.example.com/", "https:///x", "::"} {
		if err := webhook.ValidateURL(context.Background(), u, true, nil); err == nil {
			t.Errorf("%q accepted", u)
		}
	}
}

func TestRebindingRefusedAtConnect(t *testing.T) {
	_, evs := events(t)
	r := newReceiver(t, nil)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(r.srv.URL, "http://"))
	res := dnsServer(t, netip.MustParseAddr("127.0.0.1"))
	url := "http://siem.attacker.example:" + port + "/hook"
	// At create time the name resolves to loopback: refused.
	if err := webhook.ValidateURL(context.Background(), url, false, res); !errors.Is(err, webhook.ErrPrivateTarget) {
		t.Fatalf("ValidateURL: %v", err)
	}
	// The static check passes (a name), so the dispatcher starts; the
	// connect-time check must refuse the resolved loopback address.
	d, err := webhook.New(webhook.Options{Targets: []webhook.Target{{URL: url}}, Resolver: res, RateLimit: 1000, BackoffBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	d.Notify(evs[0])
	waitFor(t, "the refused delivery", func() bool { return d.Stats().Failed == 1 })
	closeD(t, d)
	if n := len(r.requests()); n != 0 {
		t.Fatalf("the loopback receiver got %d requests", n)
	}
	if st := d.Stats(); st.Retries != 0 {
		t.Fatalf("a refused address was retried: %+v", st)
	}
	// With private targets allowed, the same name is delivered to.
	d, _ = webhook.New(webhook.Options{Targets: []webhook.Target{{URL: url}}, Resolver: res, RateLimit: 1000, AllowPrivate: true})
	d.Notify(evs[0])
	waitFor(t, "the allowed delivery", func() bool { return d.Stats().Delivered == 1 })
	closeD(t, d)
}

func TestPublicAddr(t *testing.T) {
	for s, want := range map[string]bool{
		"8.8.8.8": true, "1.1.1.1": true, "2606:4700::1111": true,
		"127.0.0.1": false, "10.1.1.1": false, "172.16.0.1": false, "192.168.0.1": false, "169.254.1.1": false,
		"100.64.0.1": false, "0.0.0.0": false, "255.255.255.255": false, "224.0.0.1": false, "::1": false,
		"fe80::1": false, "fd00::1": false, "::ffff:10.0.0.1": false, "::": false, "2002:a00:1::": false,
	} {
		if got := webhook.PublicAddr(netip.MustParseAddr(s)); got != want {
			t.Errorf("%s: got %v want %v", s, got, want)
		}
	}
}
