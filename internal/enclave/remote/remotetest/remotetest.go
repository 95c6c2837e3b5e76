// Package remotetest runs a stand-in for the remote guard enclave of
// internal/enclave/remote: a real HTTP server on loopback that speaks
// protocol version 1, attests with a test Nitro authority
// (internal/enclave/nitro/nitrotest) and answers inference requests with a
// function of the test's choosing. [Faults] make it misbehave in each way
// the client must refuse.
//
// Its side of the protocol is written from the package doc of
// internal/enclave/remote, not from that package's code, so that the two
// sides check each other.
//
// Only tests import this package: its documents chain to a root that means
// nothing outside a test.
//
// # Usage
//
//	s := remotetest.NewServer(t, remotetest.Options{
//		Infer: func(r remotetest.Request) (string, string, error) { return "ALLOW", "guard-v1", nil },
//	})
//	ch, rec, err := remote.Attest(ctx, s.Config())
//
// # Limitations
//
// One Authority signs every document and the enclave keys are made per
// session, as a Nitro enclave could; the server keeps every session in
// memory until it is closed.
package remotetest

import (
	"bytes"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/ironvise/ironvise/internal/enclave/nitro/nitrotest"
	"github.com/ironvise/ironvise/internal/enclave/remote"
)

// Faults say how the server misbehaves. The zero value is an honest enclave.
type Faults struct {
	// ReplayDocument answers every attestation after the first with the
	// first one's session and document, whose nonce is old.
	ReplayDocument bool
	// WrongNonce signs a nonce other than the one sent.
	WrongNonce bool
	// WrongPCR0 reports another enclave image's PCR0.
	WrongPCR0 bool
	// SwappedKey puts in public_key a key other than the one the server
	// derives the channel with, as a relay that forwards the genuine
	// enclave's key would.
	SwappedKey bool
	// ForeignBinding binds user_data to another client key, as a man in the
	// middle that attested with its own key would.
	ForeignBinding bool
	// BadSignature flips a bit of the document's signature.
	BadSignature bool
	// ForeignChain signs with a leaf from an intermediate that does not
	// chain to Roots.
	ForeignChain bool
	// ExpiredCertificate signs with a leaf that expired before the
	// document's timestamp.
	ExpiredCertificate bool
	// Age dates the document this long before the server's clock.
	Age time.Duration
	// TamperReply flips a bit of every inference reply's ciphertext.
	TamperReply bool
	// ReuseReplyCounter seals every reply after a session's first with the
	// counter of the reply before it.
	ReuseReplyCounter bool
}

// Request is the plaintext of an inference request.
type Request struct {
	System      string    `json:"system"`
	Messages    []Message `json:"messages"`
	Temperature float64   `json:"temperature"`
	MaxTokens   int       `json:"max_tokens"`
	JSON        bool      `json:"json"`
}

// Message is one turn of a [Request].
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Options configure a [Server].
type Options struct {
	// Infer answers an inference request with the reply's text and model
	// name, or an error the enclave reports to the client; nil answers
	// "ALLOW" from model "remotetest-guard".
	Infer func(Request) (text, model string, err error)
	// Faults are the initial faults ([Server.SetFaults] changes them).
	Faults Faults
	// TLS serves HTTPS with httptest's certificate ([Server.Config] carries
	// a client that trusts it).
	TLS bool
}

// ModuleID is the module_id of the server's documents.
const ModuleID = "i-0123456789abcdef0-enc0fedcba987654321"

// Server is a stand-in enclave on loopback.
type Server struct {
	// URL is the server's base URL.
	URL string
	// Authority signs the documents; Authority.Roots is the root to trust.
	Authority *nitrotest.Authority
	// PCRs are the PCRs an honest document reports: 0, 1 and 2.
	PCRs map[int][]byte

	srv   *httptest.Server
	infer func(Request) (string, string, error)

	mu       sync.Mutex
	faults   Faults              // guarded by mu
	sessions map[string]*session // guarded by mu
	first    *attestResponse     // guarded by mu; the first attestation's answer
	requests []Request           // guarded by mu
}

// session is the server's side of one channel.
type session struct {
	id       string
	c2e, e2c []byte
	recvSeq  uint64 // the next client->enclave counter
	sendSeq  uint64 // the next enclave->client counter
}

// PCR returns the test PCR value for s (SHA-384 of s).
func PCR(s string) []byte {
	h := sha512.Sum384([]byte(s))
	return h[:]
}

// NewServer starts a server and closes it when tb ends.
func NewServer(tb testing.TB, opt Options) *Server {
	tb.Helper()
	a, err := nitrotest.NewAuthority()
	if err != nil {
		tb.Fatalf("remotetest: authority: %v", err)
	}
	s := &Server{
		Authority: a,
		PCRs:      map[int][]byte{0: PCR("remotetest image"), 1: PCR("remotetest kernel"), 2: PCR("remotetest application")},
		infer:     opt.Infer,
		faults:    opt.Faults,
		sessions:  map[string]*session{},
	}
	if s.infer == nil {
		s.infer = func(Request) (string, string, error) { return "ALLOW", "remotetest-guard", nil }
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/attest", s.attest)
	mux.HandleFunc("POST /v1/infer", s.inferHandler)
	if opt.TLS {
		s.srv = httptest.NewTLSServer(mux)
	} else {
		s.srv = httptest.NewServer(mux)
	}
	s.URL = s.srv.URL
	tb.Cleanup(s.srv.Close)
	return s
}

// Config returns a client configuration for the server: its URL, its PCRs
// pinned, its root and, with TLS, a client that trusts its certificate.
func (s *Server) Config() remote.Config {
	pcrs := make(map[int][]byte, len(s.PCRs))
	for i, v := range s.PCRs {
		pcrs[i] = bytes.Clone(v)
	}
	return remote.Config{URL: s.URL, PCRs: pcrs, Roots: s.Authority.Roots, HTTPClient: s.srv.Client()}
}

// SetFaults replaces the server's faults.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
}

// Requests returns the inference requests the server opened, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Sessions returns the number of sessions the server attested.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

type attestRequest struct {
	Nonce           []byte `json:"nonce"`
	ClientPublicKey []byte `json:"client_public_key"`
}

type attestResponse struct {
	Session             string `json:"session"`
	AttestationDocument []byte `json:"attestation_document"`
}

type inferRequest struct {
	Session    string `json:"session"`
	Seq        uint64 `json:"seq"`
	Ciphertext []byte `json:"ciphertext"`
}

type inferResponse struct {
	Seq        uint64 `json:"seq"`
	Ciphertext []byte `json:"ciphertext"`
}

type reply struct {
	Text  string `json:"text"`
	Model string `json:"model"`
	Error string `json:"error,omitempty"`
}

func (s *Server) attest(w http.ResponseWriter, r *http.Request) {
	var req attestRequest
	if !readJSON(w, r, &req) {
		return
	}
	if len(req.Nonce) != 32 || len(req.ClientPublicKey) != 32 {
		http.Error(w, "nonce and client_public_key must be 32 bytes", http.StatusBadRequest)
		return
	}
	clientPub, err := ecdh.X25519().NewPublicKey(req.ClientPublicKey)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	f := s.faults
	if f.ReplayDocument && s.first != nil {
		first := *s.first
		s.mu.Unlock()
		writeJSON(w, first)
		return
	}
	s.mu.Unlock()

	priv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	z, err := priv.ECDH(clientPub)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id := make([]byte, 16)
	rand.Read(id)
	sess := &session{id: hex.EncodeToString(id)}
	enclavePub := priv.PublicKey().Bytes()
	sess.c2e = derive(z, req.Nonce, "client->enclave", sess.id, req.ClientPublicKey, enclavePub)
	sess.e2c = derive(z, req.Nonce, "enclave->client", sess.id, req.ClientPublicKey, enclavePub)

	fields := nitrotest.Fields{
		ModuleID:  ModuleID,
		Timestamp: time.Now().Add(-f.Age),
		PCRs:      s.PCRs,
		PublicKey: enclavePub,
		UserData:  binding(req.ClientPublicKey),
		Nonce:     req.Nonce,
	}
	if f.WrongNonce {
		fields.Nonce = random(32)
	}
	if f.WrongPCR0 {
		fields.PCRs = map[int][]byte{0: PCR("another image"), 1: s.PCRs[1], 2: s.PCRs[2]}
	}
	if f.SwappedKey {
		other, err := ecdh.X25519().GenerateKey(rand.Reader)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fields.PublicKey = other.PublicKey().Bytes()
	}
	if f.ForeignBinding {
		fields.UserData = binding(random(32))
	}
	var doc []byte
	switch {
	case f.BadSignature:
		doc, err = s.Authority.SignCorruptSignature(fields)
	case f.ForeignChain:
		doc, err = s.Authority.SignForeignCA(fields)
	case f.ExpiredCertificate:
		doc, err = s.Authority.SignExpiredLeaf(fields)
	default:
		doc, err = s.Authority.Sign(fields)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	resp := attestResponse{Session: sess.id, AttestationDocument: doc}
	s.mu.Lock()
	s.sessions[sess.id] = sess
	if s.first == nil {
		s.first = &resp
	}
	s.mu.Unlock()
	writeJSON(w, resp)
}

func (s *Server) inferHandler(w http.ResponseWriter, r *http.Request) {
	var req inferRequest
	if !readJSON(w, r, &req) {
		return
	}
	s.mu.Lock()
	sess := s.sessions[req.Session]
	f := s.faults
	if sess == nil {
		s.mu.Unlock()
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	if req.Seq != sess.recvSeq {
		want := sess.recvSeq
		s.mu.Unlock()
		http.Error(w, "message "+strconv.FormatUint(req.Seq, 10)+", want "+strconv.FormatUint(want, 10), http.StatusConflict)
		return
	}
	pt, err := open(sess.c2e, "client->enclave", sess.id, req.Seq, req.Ciphertext)
	if err != nil {
		s.mu.Unlock()
		http.Error(w, "message does not open", http.StatusBadRequest)
		return
	}
	sess.recvSeq++
	var q Request
	if err := json.Unmarshal(pt, &q); err != nil {
		s.mu.Unlock()
		http.Error(w, "request is not JSON", http.StatusBadRequest)
		return
	}
	s.requests = append(s.requests, q)
	s.mu.Unlock()

	// The model runs without the lock: a slow one must not stall others.
	var a reply
	text, model, err := s.infer(q)
	if err != nil {
		a.Error = err.Error()
	} else {
		a.Text, a.Model = text, model
	}
	pt, err = json.Marshal(a)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}

	s.mu.Lock()
	seq := sess.sendSeq
	if f.ReuseReplyCounter && seq > 0 {
		seq--
	}
	sess.sendSeq++
	ct := seal(sess.e2c, "enclave->client", sess.id, seq, pt)
	s.mu.Unlock()
	if f.TamperReply {
		ct[len(ct)/2] ^= 0x04
	}
	writeJSON(w, inferResponse{Seq: seq, Ciphertext: ct})
}

// derive is K(dir) of the protocol.
func derive(z, nonce []byte, dir, session string, clientPub, enclavePub []byte) []byte {
	var info []byte
	info = append(info, "ironvise-enclave-v1 key "...)
	info = append(info, dir...)
	info = append(info, 0)
	info = binary.BigEndian.AppendUint16(info, uint16(len(session)))
	info = append(info, session...)
	info = append(info, clientPub...)
	info = append(info, enclavePub...)
	k, err := hkdf.Key(sha256.New, z, nonce, string(info), 32)
	if err != nil {
		panic(err) // only for a length HKDF-SHA256 cannot give
	}
	return k
}

// ad is the additional data of the protocol.
func ad(dir, session string, seq uint64) []byte {
	var b []byte
	b = append(b, "ironvise-enclave-v1 msg "...)
	b = append(b, dir...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(session)))
	b = append(b, session...)
	return binary.BigEndian.AppendUint64(b, seq)
}

func nonce(seq uint64) []byte {
	n := make([]byte, 12)
	binary.BigEndian.PutUint64(n[4:], seq)
	return n
}

func seal(key []byte, dir, session string, seq uint64, pt []byte) []byte {
	aead, err := chacha20poly1305.New(key)
	if err != nil {
		panic(err) // the key is always 32 bytes
	}
	return aead.Seal(nil, nonce(seq), pt, ad(dir, session, seq))
}

func open(key []byte, dir, session string, seq uint64, ct []byte) ([]byte, error) {
	aead, err := chacha20poly1305.New(key)
	if err != nil {
		return nil, err
	}
	return aead.Open(nil, nonce(seq), ct, ad(dir, session, seq))
}

// binding is the user_data for a client key.
func binding(clientPub []byte) []byte {
	h := sha256.Sum256(append([]byte("ironvise-enclave-v1 client key"), clientPub...))
	return h[:]
}

func random(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
