package remote

import (
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/channel-v1.json")

// pair returns both ends of a channel keyed from a real X25519 exchange:
// the client's, and the enclave's (which sends with e2c and receives with
// c2e).
func pair(t testing.TB, session string) (client, enc *Channel) {
	t.Helper()
	cpriv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	epriv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, NonceSize)
	rand.Read(nonce)
	cz, err := cpriv.ECDH(epriv.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	ez, err := epriv.ECDH(cpriv.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	cpub, epub := cpriv.PublicKey().Bytes(), epriv.PublicKey().Bytes()
	c2e, e2c, err := deriveKeys(cz, nonce, session, cpub, epub)
	if err != nil {
		t.Fatal(err)
	}
	ec2e, ee2c, err := deriveKeys(ez, nonce, session, cpub, epub)
	if err != nil {
		t.Fatal(err)
	}
	if c2e != ec2e || e2c != ee2c {
		t.Fatal("the two sides derived different keys")
	}
	client = newClientChannel("http://127.0.0.1:1", session, c2e, e2c)
	enc = &Channel{url: "http://127.0.0.1:1", session: session,
		send: half{key: e2c, dir: dirE2C}, recv: half{key: c2e, dir: dirC2E}}
	return client, enc
}

func seal(t testing.TB, c *Channel, pt string) (uint64, []byte) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	seq, ct, err := c.sealLocked([]byte(pt))
	if err != nil {
		t.Fatalf("seal: %v", err)
	}
	return seq, ct
}

func open(c *Channel, seq uint64, ct []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.openLocked(seq, ct)
}

func TestDeriveKeys(t *testing.T) {
	t.Parallel()
	shared := bytes.Repeat([]byte{1}, 32)
	nonce := bytes.Repeat([]byte{2}, NonceSize)
	cpub := bytes.Repeat([]byte{3}, KeySize)
	epub := bytes.Repeat([]byte{4}, KeySize)
	c2e, e2c, err := deriveKeys(shared, nonce, "s1", cpub, epub)
	if err != nil {
		t.Fatal(err)
	}
	if c2e == e2c {
		t.Fatal("client->enclave and enclave->client keys are equal")
	}
	// Every input must change both keys: a key that ignored the nonce
	// would repeat across attestations, one that ignored a public key or
	// the session would be shared with another session.
	for _, tc := range []struct {
		name          string
		shared, nonce []byte
		session       string
		cpub, epub    []byte
	}{
		{"shared secret", bytes.Repeat([]byte{9}, 32), nonce, "s1", cpub, epub},
		{"nonce", shared, bytes.Repeat([]byte{9}, NonceSize), "s1", cpub, epub},
		{"session", shared, nonce, "s2", cpub, epub},
		{"client key", shared, nonce, "s1", bytes.Repeat([]byte{9}, KeySize), epub},
		{"enclave key", shared, nonce, "s1", cpub, bytes.Repeat([]byte{9}, KeySize)},
		// The length prefix keeps the session from running into the keys.
		{"session and key shifted", shared, nonce, "s1\x03", bytes.Repeat([]byte{3}, KeySize-1), append(bytes.Repeat([]byte{4}, KeySize), 4)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, err := deriveKeys(tc.shared, tc.nonce, tc.session, tc.cpub, tc.epub)
			if err != nil {
				t.Fatal(err)
			}
			if a == c2e || b == e2c {
				t.Errorf("changing the %s left a key unchanged", tc.name)
			}
		})
	}
}

func TestChannelRoundTrip(t *testing.T) {
	t.Parallel()
	client, enc := pair(t, "sess")
	for i := range 3 {
		msg := fmt.Sprintf("request %d", i)
		seq, ct := seal(t, client, msg)
		if seq != uint64(i) {
			t.Fatalf("client sealed message %d with counter %d", i, seq)
		}
		if bytes.Contains(ct, []byte(msg)) {
			t.Fatalf("ciphertext contains the plaintext")
		}
		got, err := open(enc, seq, ct)
		if err != nil || string(got) != msg {
			t.Fatalf("enclave opened %q, %v; want %q", got, err, msg)
		}
		reply := fmt.Sprintf("reply %d", i)
		seq, ct = seal(t, enc, reply)
		got, err = open(client, seq, ct)
		if err != nil || string(got) != reply {
			t.Fatalf("client opened %q, %v; want %q", got, err, reply)
		}
	}
}

func TestChannelRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// attack seals on a fresh pair and returns the channel under
		// attack with the message presented to it.
		attack func(t *testing.T, client, enc *Channel) (*Channel, uint64, []byte)
	}{
		{"replayed", func(t *testing.T, client, enc *Channel) (*Channel, uint64, []byte) {
			seq, ct := seal(t, client, "m0")
			if _, err := open(enc, seq, ct); err != nil {
				t.Fatal(err)
			}
			return enc, seq, ct
		}},
		{"reordered", func(t *testing.T, client, enc *Channel) (*Channel, uint64, []byte) {
			seal(t, client, "m0")
			seq, ct := seal(t, client, "m1")
			return enc, seq, ct
		}},
		{"renumbered", func(t *testing.T, client, enc *Channel) (*Channel, uint64, []byte) {
			seal(t, client, "m0")
			_, ct := seal(t, client, "m1")
			return enc, 0, ct // message 1 presented as the expected 0
		}},
		{"reflected", func(t *testing.T, client, enc *Channel) (*Channel, uint64, []byte) {
			// A client->enclave message sent back to the client as if the
			// enclave had said it.
			seq, ct := seal(t, client, "m0")
			return client, seq, ct
		}},
		{"tampered", func(t *testing.T, client, enc *Channel) (*Channel, uint64, []byte) {
			seq, ct := seal(t, client, "m0")
			ct[0] ^= 1
			return enc, seq, ct
		}},
		{"tampered tag", func(t *testing.T, client, enc *Channel) (*Channel, uint64, []byte) {
			seq, ct := seal(t, client, "m0")
			ct[len(ct)-1] ^= 0x80
			return enc, seq, ct
		}},
		{"truncated", func(t *testing.T, client, enc *Channel) (*Channel, uint64, []byte) {
			seq, ct := seal(t, client, "m0")
			return enc, seq, ct[:len(ct)-1]
		}},
		{"other session", func(t *testing.T, client, enc *Channel) (*Channel, uint64, []byte) {
			// The same keys under another session id: only the additional
			// data differs.
			seq, ct := seal(t, client, "m0")
			other := &Channel{url: enc.url, session: "other", recv: enc.recv}
			return other, seq, ct
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client, enc := pair(t, "sess")
			victim, seq, ct := tc.attack(t, client, enc)
			if got, err := open(victim, seq, ct); !errors.Is(err, ErrChannel) {
				t.Fatalf("open = %q, %v; want ErrChannel", got, err)
			}
			// The channel is dead afterwards, for opening and sealing.
			if _, err := open(victim, 0, nil); !errors.Is(err, ErrChannel) || !strings.Contains(err.Error(), "dead") {
				t.Errorf("open after failure: %v; want a dead channel", err)
			}
			victim.mu.Lock()
			_, _, err := victim.sealLocked([]byte("x"))
			keys := victim.send.key != [KeySize]byte{} || victim.recv.key != [KeySize]byte{}
			victim.mu.Unlock()
			if !errors.Is(err, ErrChannel) {
				t.Errorf("seal after failure: %v; want ErrChannel", err)
			}
			if keys {
				t.Error("a dead channel kept its keys")
			}
		})
	}
}

func TestChannelCounterExhausted(t *testing.T) {
	t.Parallel()
	client, _ := pair(t, "sess")
	client.send.seq = 1<<64 - 1
	client.mu.Lock()
	_, _, err := client.sealLocked([]byte("x"))
	client.mu.Unlock()
	if !errors.Is(err, ErrChannel) {
		t.Fatalf("seal at the last counter: %v; want ErrChannel (the counter would wrap)", err)
	}
}

func TestExportImport(t *testing.T) {
	t.Parallel()
	client, enc := pair(t, "sess")
	for i := range 2 {
		seq, ct := seal(t, client, "q")
		if _, err := open(enc, seq, ct); err != nil {
			t.Fatal(err)
		}
		seq, ct = seal(t, enc, "a")
		if _, err := open(client, seq, ct); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	blob, err := client.Export()
	if err != nil {
		t.Fatal(err)
	}
	// Formatting never shows the fields (the keys among them).
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		if got, want := fmt.Sprintf(verb, client), "remote.Channel(session sess at http://127.0.0.1:1)"; got != want {
			t.Errorf("Sprintf(%q) = %q; want %q", verb, got, want)
		}
	}
	// The exported channel is spent: sealing with it again would reuse
	// counter 2 under the same key.
	client.mu.Lock()
	_, _, err = client.sealLocked([]byte("again"))
	client.mu.Unlock()
	if !errors.Is(err, ErrChannel) {
		t.Fatalf("seal after Export: %v; want ErrChannel", err)
	}
	if _, err := client.Export(); !errors.Is(err, ErrChannel) {
		t.Fatalf("second Export: %v; want ErrChannel", err)
	}

	imp, err := ImportChannel(blob)
	if err != nil {
		t.Fatal(err)
	}
	if imp.url != client.url || imp.session != client.session {
		t.Fatalf("imported %s; want %s", imp, client)
	}
	seq, ct := seal(t, imp, "q2")
	if seq != 2 {
		t.Fatalf("imported channel sealed counter %d; want 2", seq)
	}
	if got, err := open(enc, seq, ct); err != nil || string(got) != "q2" {
		t.Fatalf("enclave opened %q, %v", got, err)
	}
	seq, ct = seal(t, enc, "a2")
	if got, err := open(imp, seq, ct); err != nil || string(got) != "a2" {
		t.Fatalf("imported channel opened %q, %v", got, err)
	}
}

func TestImportChannelRefuses(t *testing.T) {
	t.Parallel()
	client, _ := pair(t, "sess")
	blob, err := client.Export()
	if err != nil {
		t.Fatal(err)
	}
	var good map[string]any
	if err := json.Unmarshal(blob, &good); err != nil {
		t.Fatal(err)
	}
	edit := func(k string, v any) []byte {
		m := map[string]any{}
		for k, v := range good {
			m[k] = v
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		return b
	}
	zero := make([]byte, KeySize)
	for _, tc := range []struct {
		name string
		blob []byte
	}{
		{"not JSON", []byte("nope")},
		{"trailing data", append(append([]byte{}, blob...), " {}"...)},
		{"unknown field", edit("extra", 1)},
		{"version 2", edit("v", 2)},
		{"no version", edit("v", nil)},
		{"remote http", edit("url", "http://192.0.2.1:8080")},
		{"no session", edit("session", "")},
		{"session with newline", edit("session", "a\nb")},
		{"short key", edit("client_to_enclave_key", make([]byte, 16))},
		{"no key", edit("enclave_to_client_key", nil)},
		{"zero key", edit("enclave_to_client_key", zero)},
		{"equal keys", edit("enclave_to_client_key", good["client_to_enclave_key"])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if ch, err := ImportChannel(tc.blob); !errors.Is(err, ErrConfig) {
				t.Errorf("ImportChannel = %v, %v; want ErrConfig", ch, err)
			}
		})
	}
	if _, err := ImportChannel(blob); err != nil {
		t.Fatalf("the unedited export: %v", err)
	}
}

func FuzzImportChannel(f *testing.F) {
	client, _ := pair(f, "sess")
	blob, err := client.Export()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(blob)                                                   // a valid export
	f.Add([]byte(`{}`))                                           // every field missing
	f.Add([]byte(`{"v":1,"url":"http://[::1]:1","session":"s"}`)) // no keys
	f.Add([]byte(`{"v":1} {"v":1}`))                              // two values
	f.Fuzz(func(t *testing.T, b []byte) {
		ch, err := ImportChannel(b)
		if err != nil {
			if !errors.Is(err, ErrConfig) && !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v wraps no sentinel", err)
			}
			return
		}
		// An imported channel re-exports to an equivalent import.
		again, err := ch.Export()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ImportChannel(again); err != nil {
			t.Fatalf("re-import: %v", err)
		}
	})
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url, want string // want "" means refused
	}{
		{"https://enclave.example.com", "https://enclave.example.com"},
		{"https://enclave.example.com:8443/guard/", "https://enclave.example.com:8443/guard"},
		{"http://127.0.0.1:9000", "http://127.0.0.1:9000"},
		{"http://[::1]:9000/", "http://[::1]:9000"},
		// Plain HTTP across a network shows the traffic to anyone on it.
		{"http://192.0.2.7:9000", ""},
		// A name can be resolved elsewhere.
		{"http://localhost:9000", ""},
		{"ftp://enclave.example.com", ""},
		{"https://user:pw@enclave.example.com", ""},
		{"https://enclave.example.com/?x=1", ""},
		{"https://enclave.example.com/#f", ""},
		{"https:///nohost", ""},
		{"enclave.example.com", ""},
		{"", ""},
		{"https://bad host", ""},
	} {
		t.Run(tc.url, func(t *testing.T) {
			got, err := checkURL(tc.url)
			if tc.want == "" {
				if !errors.Is(err, ErrConfig) {
					t.Errorf("checkURL(%q) = %q, %v; want ErrConfig", tc.url, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("checkURL(%q) = %q, %v; want %q", tc.url, got, err, tc.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	pcr := func(b byte) []byte { return bytes.Repeat([]byte{b}, PCRSize) }
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"good", Config{URL: "https://e.example", PCRs: map[int][]byte{0: pcr(1), 1: pcr(2), 2: pcr(3)}}, true},
		{"no PCRs", Config{URL: "https://e.example"}, false},
		{"no PCR0", Config{URL: "https://e.example", PCRs: map[int][]byte{1: pcr(1)}}, false},
		{"zero PCR0 (debug mode)", Config{URL: "https://e.example", PCRs: map[int][]byte{0: make([]byte, PCRSize)}}, false},
		{"zero PCR8", Config{URL: "https://e.example", PCRs: map[int][]byte{0: pcr(1), 8: make([]byte, PCRSize)}}, false},
		{"short PCR0", Config{URL: "https://e.example", PCRs: map[int][]byte{0: pcr(1)[:32]}}, false},
		{"index 32", Config{URL: "https://e.example", PCRs: map[int][]byte{0: pcr(1), 32: pcr(1)}}, false},
		{"index -1", Config{URL: "https://e.example", PCRs: map[int][]byte{0: pcr(1), -1: pcr(1)}}, false},
		{"negative MaxAge", Config{URL: "https://e.example", PCRs: map[int][]byte{0: pcr(1)}, MaxAge: -1}, false},
		{"bad URL", Config{URL: "http://e.example", PCRs: map[int][]byte{0: pcr(1)}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.cfg.validate()
			if tc.ok && err != nil {
				t.Errorf("validate: %v; want nil", err)
			}
			if !tc.ok && !errors.Is(err, ErrConfig) {
				t.Errorf("validate: %v; want ErrConfig", err)
			}
		})
	}
}

// golden is testdata/channel-v1.json: fixed inputs and what protocol
// version 1 makes of them. An enclave implementation written elsewhere is
// checked against the same file.
type golden struct {
	Shared, Nonce, ClientPublicKey, EnclavePublicKey string
	Session                                          string
	ClientToEnclaveKey, EnclaveToClientKey           string
	Plaintext                                        string
	// Sealed0 and Sealed1 are Plaintext sealed as messages 0 and 1 from
	// client to enclave; ReplySealed0 as message 0 from enclave to client.
	Sealed0, Sealed1, ReplySealed0 string
}

func TestGoldenV1(t *testing.T) {
	t.Parallel()
	path := filepath.Join("testdata", "channel-v1.json")
	h := func(b byte, n int) string { return hex.EncodeToString(bytes.Repeat([]byte{b}, n)) }
	in := golden{
		Shared: h(0x11, 32), Nonce: h(0x22, NonceSize), ClientPublicKey: h(0x33, KeySize), EnclavePublicKey: h(0x44, KeySize),
		Session: "golden-session", Plaintext: `{"system":"s","messages":[{"role":"user","content":"hi"}],"temperature":0,"max_tokens":0,"json":false}`,
	}
	dec := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	c2e, e2c, err := deriveKeys(dec(in.Shared), dec(in.Nonce), in.Session, dec(in.ClientPublicKey), dec(in.EnclavePublicKey))
	if err != nil {
		t.Fatal(err)
	}
	got := in
	got.ClientToEnclaveKey, got.EnclaveToClientKey = hex.EncodeToString(c2e[:]), hex.EncodeToString(e2c[:])
	client := newClientChannel("https://e.example", in.Session, c2e, e2c)
	_, ct0 := seal(t, client, in.Plaintext)
	_, ct1 := seal(t, client, in.Plaintext)
	enc := &Channel{session: in.Session, send: half{key: e2c, dir: dirE2C}}
	_, r0 := seal(t, enc, in.Plaintext)
	got.Sealed0, got.Sealed1, got.ReplySealed0 = hex.EncodeToString(ct0), hex.EncodeToString(ct1), hex.EncodeToString(r0)
	b, err := json.MarshalIndent(got, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if *update {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("protocol version 1 changed; got\n%s\nwant\n%s", b, want)
	}
}
