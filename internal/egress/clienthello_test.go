package egress

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"testing"
)

// realClientHello returns the records a crypto/tls client sends first.
func realClientHello(t testing.TB, serverName string) []byte {
	t.Helper()
	c1, c2 := net.Pipe()
	go func() {
		tls.Client(c1, &tls.Config{ServerName: serverName, InsecureSkipVerify: true}).Handshake()
		c1.Close()
	}()
	raw, _, err := readClientHello(c2)
	c2.Close()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestParseSNIRealHello(t *testing.T) {
	raw := realClientHello(t, "api.example.com")
	got, msg, err := readClientHello(bytes.NewReader(raw))
	if err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("re-reading: %v", err)
	}
	if sni, err := parseSNI(msg); err != nil || sni != "api.example.com" {
		t.Fatalf("parseSNI = %q, %v", sni, err)
	}
	_, msg, _ = readClientHello(bytes.NewReader(realClientHello(t, "")))
	if sni, err := parseSNI(msg); err != nil || sni != "" {
		t.Fatalf("no server name: parseSNI = %q, %v", sni, err)
	}
	// Every truncation is an error, never a panic or a name.
	for n := range len(msg) {
		if sni, err := parseSNI(msg[:n]); err == nil && sni != "" {
			t.Fatalf("truncated to %d bytes: parsed %q", n, sni)
		}
	}
}

func TestReadClientHelloSplitRecords(t *testing.T) {
	raw := realClientHello(t, "split.example")
	_, msg, _ := readClientHello(bytes.NewReader(raw))
	// The same handshake message in records of 7 bytes each.
	var split []byte
	for i := 0; i < len(msg); i += 7 {
		frag := msg[i:min(i+7, len(msg))]
		split = append(split, 22, 3, 1, 0, byte(len(frag)))
		split = append(split, frag...)
	}
	_, got, err := readClientHello(bytes.NewReader(split))
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("split records: %v", err)
	}
	for _, bad := range [][]byte{
		[]byte("GET / HTTP/1.1\r\n\r\n"),
		{22, 3, 1, 0, 0},             // empty record
		{22, 3, 1, 0x40, 1},          // over 16 KiB
		{23, 3, 3, 0, 1, 0},          // application data
		{22, 3, 1, 0, 4, 2, 0, 0, 0}, // a ServerHello
		{22, 3, 1, 0, 4, 1, 0xff, 0xff, 0xff},
	} {
		if _, _, err := readClientHello(bytes.NewReader(bad)); err == nil {
			t.Errorf("readClientHello(%x) accepted", bad)
		} else if len(bad) > 5 && bad[0] != 22 && !errors.Is(err, errNotTLS) {
			t.Errorf("readClientHello(%x): %v is not errNotTLS", bad, err)
		}
	}
}

func TestParseSNIRejectsOddNames(t *testing.T) {
	_, msg, _ := readClientHello(bytes.NewReader(realClientHello(t, "aaaa.example")))
	i := bytes.Index(msg, []byte("aaaa.example"))
	for _, c := range []byte{0, ' ', 0x80, '\n'} {
		m := bytes.Clone(msg)
		m[i+1] = c
		if sni, err := parseSNI(m); err == nil {
			t.Errorf("byte %#x: parsed %q", c, sni)
		}
	}
}

func FuzzParseSNI(f *testing.F) {
	for _, name := range []string{"a.example", "", "xn--bcher-kva.example"} {
		raw := realClientHello(f, name)
		f.Add(raw)
		_, msg, _ := readClientHello(bytes.NewReader(raw))
		f.Add(msg)
	}
	f.Add([]byte{22, 3, 1, 0, 4, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		raw, msg, err := readClientHello(bytes.NewReader(b))
		if err == nil {
			if len(raw) > len(b) || len(msg) < 4 || msg[0] != 1 {
				t.Fatalf("readClientHello returned raw %d msg %d from %d bytes", len(raw), len(msg), len(b))
			}
			b = msg
		}
		sni, err := parseSNI(b)
		if err == nil && sni != "" {
			for _, c := range []byte(sni) {
				if c <= ' ' || c >= 0x7f {
					t.Fatalf("name %q with byte %#x", sni, c)
				}
			}
		}
	})
}
