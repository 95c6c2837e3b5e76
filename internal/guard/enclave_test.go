package guard

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/enclave"
)

// goodMeasurement is a measurement that passes checkMeasurement against
// goodSHA.
func goodMeasurement() enclave.Measurement {
	return enclave.Measurement{
		WorkerSHA256: goodSHA, Profile: WorkerProfile, LandlockABI: 6, SeccompSHA256: strings.Repeat("cd", 32), NoNewPrivs: true,
		MemoryLocked: true, Dumpable: false, CoreLimit: 0, SecretsOverPipe: true,
	}
}

var goodSHA = strings.Repeat("ab", 32)

func TestEnclaveCheckMeasurement(t *testing.T) {
	cases := []struct {
		name   string
		change func(*enclave.Measurement)
		want   string // "" for accepted
	}{
		{"accepted", func(*enclave.Measurement) {}, ""},
		{"other executable", func(m *enclave.Measurement) { m.WorkerSHA256 = strings.Repeat("00", 32) }, "executable SHA-256"},
		{"empty hash", func(m *enclave.Measurement) { m.WorkerSHA256 = "" }, "executable SHA-256"},
		{"memory not locked", func(m *enclave.Measurement) { m.MemoryLocked = false }, "memory is not locked"},
		{"dumpable", func(m *enclave.Measurement) { m.Dumpable = true }, "dumpable"},
		{"core limit", func(m *enclave.Measurement) { m.CoreLimit = 1 << 20 }, "RLIMIT_CORE"},
		{"key from the environment", func(m *enclave.Measurement) { m.SecretsOverPipe = false }, "pipe"},
		{"other profile", func(m *enclave.Measurement) { m.Profile = "shell" }, "profile"},
		{"no landlock", func(m *enclave.Measurement) { m.LandlockABI = 0 }, "Landlock"},
		{"no seccomp", func(m *enclave.Measurement) { m.SeccompSHA256 = "" }, "seccomp"},
		{"no no_new_privs", func(m *enclave.Measurement) { m.NoNewPrivs = false }, "no_new_privs"},
		{"worker claims host checks", func(m *enclave.Measurement) { m.HostChecked = []string{"everything"} }, "host_checked"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := goodMeasurement()
			tc.change(&m)
			checked, err := checkMeasurement(m, goodSHA)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v; want accepted", err)
			case tc.want == "" && len(checked) == 0:
				t.Fatal("accepted without naming a check")
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestEnclaveOpenHello(t *testing.T) {
	key := bytes.Repeat([]byte{7}, KeyBytes)
	good, err := sealHello(key, goodMeasurement())
	if err != nil {
		t.Fatal(err)
	}
	payload := func(s string) []byte { return seal(key, HelloLabel, []byte(s)) }
	m := goodMeasurement()
	m.HostChecked = []string{}
	mj, _ := json.Marshal(m)
	cases := []struct {
		name string
		line []byte
		want error // nil for accepted
	}{
		{"accepted", good, nil},
		{"other key", mustSealHello(t, bytes.Repeat([]byte{8}, KeyBytes)), ErrBadMAC},
		// A response (or a request) of the same worker cannot pass for
		// its hello: the label differs.
		{"response label", seal(key, ResponseLabel, good[len(`{"payload":`):bytes.LastIndex(good, []byte(`,"mac"`))]), ErrBadMAC},
		{"flipped byte", bytes.Replace(good, []byte(`"memory_locked":true`), []byte(`"memory_locked":tru3`), 1), ErrMalformed},
		{"unknown key", payload(`{"enclave":"software","measurement":` + string(mj) + `,"extra":1}`), ErrMalformed},
		{"duplicate key", payload(`{"enclave":"software","enclave":"software","measurement":` + string(mj) + `}`), ErrMalformed},
		{"case-folded key", payload(`{"Enclave":"software","measurement":` + string(mj) + `}`), ErrMalformed},
		{"other level", payload(`{"enclave":"none","measurement":` + string(mj) + `}`), ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			line := bytes.TrimSuffix(tc.line, []byte("\n"))
			got, err := openHello(key, line)
			if tc.want == nil {
				if err != nil || got.WorkerSHA256 != goodSHA || !got.MemoryLocked {
					t.Fatalf("got %+v, %v; want the measurement", got, err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v; want %v", err, tc.want)
			}
		})
	}
}

func mustSealHello(t *testing.T, key []byte) []byte {
	t.Helper()
	line, err := sealHello(key, goodMeasurement())
	if err != nil {
		t.Fatal(err)
	}
	return line
}

func TestReadWorkerSecrets(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the secret's locked mapping is Linux-only")
	}
	hexKey := strings.Repeat("0a", KeyBytes)
	cases := []struct {
		name    string
		doc     string
		ok      bool
		channel string
	}{
		{"software", `{"hmac_key":"` + hexKey + `","enclave":"software"}`, true, ""},
		{"remote with channel", `{"hmac_key":"` + hexKey + `","enclave":"remote","remote_channel":"AQID"}`, true, "\x01\x02\x03"},
		{"remote without channel", `{"hmac_key":"` + hexKey + `","enclave":"remote"}`, false, ""},
		{"software with channel", `{"hmac_key":"` + hexKey + `","enclave":"software","remote_channel":"AQID"}`, false, ""},
		{"channel not base64", `{"hmac_key":"` + hexKey + `","enclave":"remote","remote_channel":"***"}`, false, ""},
		{"level none", `{"hmac_key":"` + hexKey + `","enclave":"none"}`, false, ""},
		{"short key", `{"hmac_key":"` + hexKey[2:] + `","enclave":"software"}`, false, ""},
		{"key not hex", `{"hmac_key":"` + strings.Repeat("zz", KeyBytes) + `","enclave":"software"}`, false, ""},
		{"key not a string", `{"hmac_key":[1,2],"enclave":"software"}`, false, ""},
		{"unknown member", `{"hmac_key":"` + hexKey + `","enclave":"software","x":1}`, false, ""},
		{"duplicate key", `{"hmac_key":"` + hexKey + `","hmac_key":"` + hexKey + `","enclave":"software"}`, false, ""},
		{"trailing data", `{"hmac_key":"` + hexKey + `","enclave":"software"}{}`, false, ""},
		{"empty", ``, false, ""},
		{"oversized", `{"hmac_key":"` + hexKey + `","enclave":"software"}` + strings.Repeat(" ", maxSecretsBytes), false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ReadWorkerSecrets(strings.NewReader(tc.doc))
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v; want ok=%v", err, tc.ok)
			}
			if err != nil {
				if strings.Contains(err.Error(), hexKey) {
					t.Fatalf("error %q echoes the key", err)
				}
				return
			}
			defer s.Close()
			if !bytes.Equal(s.Key.Bytes(), bytes.Repeat([]byte{10}, KeyBytes)) || string(s.RemoteChannel) != tc.channel {
				t.Fatalf("key %x, channel %q; want 0a… and %q", s.Key.Bytes(), s.RemoteChannel, tc.channel)
			}
			if err := s.Close(); err != nil || s.Key.Bytes() != nil {
				t.Fatalf("Close: %v; key still %x", err, s.Key.Bytes())
			}
		})
	}
}

func TestEnclaveEncodeSecretsRoundTrip(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the secret's locked mapping is Linux-only")
	}
	key := bytes.Repeat([]byte{0xc3}, KeyBytes)
	s, err := ReadWorkerSecrets(bytes.NewReader(encodeSecrets(key, enclave.LevelSoftware, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !bytes.Equal(s.Key.Bytes(), key) || s.Enclave != enclave.LevelSoftware || s.RemoteChannel != nil {
		t.Fatalf("read back %x %q %q; want the key, software, no channel", s.Key.Bytes(), s.Enclave, s.RemoteChannel)
	}
	channel := []byte("an exported channel \x00\xff")
	r, err := ReadWorkerSecrets(bytes.NewReader(encodeSecrets(key, enclave.LevelRemote, channel)))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !bytes.Equal(r.Key.Bytes(), key) || r.Enclave != enclave.LevelRemote || !bytes.Equal(r.RemoteChannel, channel) {
		t.Fatalf("read back %x %q %q; want the key, remote, the channel", r.Key.Bytes(), r.Enclave, r.RemoteChannel)
	}
}

// TestWorkerLineBufferMatchesBufio reads the same streams through lineBuffer (as
// the worker does) and bufio.Reader (as the host does) and wants the same
// lines and errors, and then the consumed bytes zeroed.
func TestWorkerLineBufferMatchesBufio(t *testing.T) {
	cases := []struct {
		name  string
		input string
		size  int
	}{
		{"two lines", "one\ntwo\n", 16},
		{"lines across refills", "abcdefgh\nijklmnopqrstu\nvw\n", 8},
		{"overlong line", strings.Repeat("x", 40) + "\nnext\n", 16},
		{"unterminated end", "done\npartial", 16},
		{"empty", "", 16},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lb := &lineBuffer{rd: iotestOneByte(tc.input), buf: make([]byte, tc.size)}
			br := bufio.NewReaderSize(iotestOneByte(tc.input), tc.size)
			for i := 0; ; i++ {
				got, gerr := readLine(lb, 20)
				want, werr := readLine(br, 20)
				if string(got) != string(want) || !errors.Is(gerr, werr) && gerr != werr {
					t.Fatalf("line %d: got %q, %v; want %q, %v", i, got, gerr, want, werr)
				}
				lb.wipe()
				if bytes.ContainsAny(lb.buf[:lb.r], "abcdefghijklmnopqrstuvwxyz") {
					t.Fatalf("line %d: consumed bytes not zeroed: %q", i, lb.buf)
				}
				if werr != nil && !errors.Is(werr, ErrLineTooLong) {
					break
				}
			}
		})
	}
}

// iotestOneByte returns a reader that hands out one byte per Read, so
// lineBuffer refills at every possible point.
func iotestOneByte(s string) io.Reader { return &oneByte{s: s} }

type oneByte struct{ s string }

func (o *oneByte) Read(p []byte) (int, error) {
	if o.s == "" {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0], o.s = o.s[0], o.s[1:]
	return 1, nil
}
