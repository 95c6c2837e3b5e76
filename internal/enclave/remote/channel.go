package remote

import (
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"

	"golang.org/x/crypto/chacha20poly1305"
)

// direction is the dir label of the protocol (see the package doc).
type direction string

// The two directions.
const (
	dirC2E direction = "client->enclave"
	dirE2C direction = "enclave->client"
)

// Labels that separate the protocol's uses of its inputs.
const (
	keyLabel = "ironvise-enclave-v1 key "
	adLabel  = "ironvise-enclave-v1 msg "
)

// deriveKeys derives the two directions' keys from the X25519 shared
// secret.
func deriveKeys(shared, nonce []byte, session string, clientPub, enclavePub []byte) (c2e, e2c [KeySize]byte, err error) {
	for _, d := range []struct {
		dir direction
		out *[KeySize]byte
	}{{dirC2E, &c2e}, {dirE2C, &e2c}} {
		k, err := hkdf.Key(sha256.New, shared, nonce, keyInfo(d.dir, session, clientPub, enclavePub), KeySize)
		if err != nil {
			return c2e, e2c, bug(err)
		}
		copy(d.out[:], k)
		clear(k)
	}
	return c2e, e2c, nil
}

// keyInfo is the HKDF info I(dir). The session id is length-prefixed and
// the keys have a fixed size, so no two inputs give the same info.
func keyInfo(dir direction, session string, clientPub, enclavePub []byte) string {
	b := make([]byte, 0, len(keyLabel)+len(dir)+3+len(session)+len(clientPub)+len(enclavePub))
	b = append(b, keyLabel...)
	b = append(b, dir...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(session)))
	b = append(b, session...)
	b = append(b, clientPub...)
	b = append(b, enclavePub...)
	return string(b)
}

// additionalData is the AEAD additional data of message seq in direction
// dir.
func additionalData(dir direction, session string, seq uint64) []byte {
	b := make([]byte, 0, len(adLabel)+len(dir)+3+len(session)+8)
	b = append(b, adLabel...)
	b = append(b, dir...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(session)))
	b = append(b, session...)
	return binary.BigEndian.AppendUint64(b, seq)
}

// aeadNonce is the AEAD nonce of message seq: its counter, so a key never
// sees the same nonce twice.
func aeadNonce(seq uint64) []byte {
	n := make([]byte, chacha20poly1305.NonceSize)
	binary.BigEndian.PutUint64(n[chacha20poly1305.NonceSize-8:], seq)
	return n
}

// half is one direction of a channel: its key and its next counter.
type half struct {
	key [KeySize]byte
	dir direction
	seq uint64
}

// Channel is an open channel to an attested enclave: its URL, session id,
// and each direction's key and counter. It carries one message at a time;
// concurrent users wait for each other. A Channel is made by [Attest] or
// [ImportChannel]; once it fails, is closed or is exported it is dead and
// every use fails with [ErrChannel].
type Channel struct {
	url     string
	session string

	mu   sync.Mutex
	send half  // guarded by mu
	recv half  // guarded by mu
	dead error // guarded by mu; non-nil once the channel is unusable
}

// newClientChannel returns the client's side of a channel: it sends with
// c2e and receives with e2c. The keys are copied.
func newClientChannel(base, session string, c2e, e2c [KeySize]byte) *Channel {
	return &Channel{
		url:     base,
		session: session,
		send:    half{key: c2e, dir: dirC2E},
		recv:    half{key: e2c, dir: dirE2C},
	}
}

// String implements fmt.Stringer; it names the session and URL, never the
// keys.
func (c *Channel) String() string {
	return "remote.Channel(session " + c.session + " at " + c.url + ")"
}

// GoString implements fmt.GoStringer like String, so %#v cannot print the
// keys.
func (c *Channel) GoString() string { return c.String() }

// Close zeroes the channel's keys; every later use fails.
func (c *Channel) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.killLocked(errors.New("closed"))
}

// killLocked makes the channel dead with cause err (the first cause wins)
// and zeroes its keys.
// c.mu must be held.
func (c *Channel) killLocked(err error) {
	if c.dead == nil {
		c.dead = err
	}
	clear(c.send.key[:])
	clear(c.recv.key[:])
}

// deadLocked returns the error of using a dead channel, or nil.
// c.mu must be held.
func (c *Channel) deadLocked() error {
	if c.dead != nil {
		return fmt.Errorf("remote: channel %s is dead (%w): %w", c.session, c.dead, ErrChannel)
	}
	return nil
}

// sealLocked seals plaintext as the next message of the sending direction
// and returns its counter and ciphertext.
// c.mu must be held.
func (c *Channel) sealLocked(plaintext []byte) (uint64, []byte, error) {
	if err := c.deadLocked(); err != nil {
		return 0, nil, err
	}
	// A counter that wrapped around would reuse a nonce under the same key.
	if c.send.seq == math.MaxUint64 {
		err := fmt.Errorf("remote: channel %s: %s counter exhausted: %w", c.session, c.send.dir, ErrChannel)
		c.killLocked(err)
		return 0, nil, err
	}
	aead, err := chacha20poly1305.New(c.send.key[:])
	if err != nil {
		return 0, nil, bug(err)
	}
	seq := c.send.seq
	ct := aead.Seal(nil, aeadNonce(seq), plaintext, additionalData(c.send.dir, c.session, seq))
	// The counter is spent even if the message never arrives: a nonce is
	// never sealed under twice.
	c.send.seq++
	return seq, ct, nil
}

// openLocked opens message seq of the receiving direction. Any failure
// kills the channel.
// c.mu must be held.
func (c *Channel) openLocked(seq uint64, ciphertext []byte) ([]byte, error) {
	if err := c.deadLocked(); err != nil {
		return nil, err
	}
	// Only the next message is accepted: an old one is a replay, a later
	// one means messages were dropped or reordered.
	if seq != c.recv.seq {
		err := fmt.Errorf("remote: channel %s: %s message %d, want %d (replayed or reordered): %w", c.session, c.recv.dir, seq, c.recv.seq, ErrChannel)
		c.killLocked(err)
		return nil, err
	}
	aead, err := chacha20poly1305.New(c.recv.key[:])
	if err != nil {
		return nil, bug(err)
	}
	// The tag covers the ciphertext, the direction, the session and the
	// counter: a tampered message, or one from the other direction or
	// another session, does not open.
	pt, err := aead.Open(nil, aeadNonce(seq), ciphertext, additionalData(c.recv.dir, c.session, seq))
	if err != nil {
		err = fmt.Errorf("remote: channel %s: %s message %d does not open: %w", c.session, c.recv.dir, seq, errors.Join(err, ErrChannel))
		c.killLocked(err)
		return nil, err
	}
	c.recv.seq++
	return pt, nil
}

// exportVersion is the version of the [Channel.Export] encoding.
const exportVersion = 1

// exported is the JSON encoding of a client channel.
type exported struct {
	Version int    `json:"v"`
	URL     string `json:"url"`
	Session string `json:"session"`
	SendKey []byte `json:"client_to_enclave_key"`
	SendSeq uint64 `json:"client_to_enclave_seq"`
	RecvKey []byte `json:"enclave_to_client_key"`
	RecvSeq uint64 `json:"enclave_to_client_seq"`
}

// Export encodes the channel (URL, session, both keys and counters) for
// [ImportChannel] in another process, and kills c. The encoding holds the
// keys: send it only over a pipe to the guard worker, never through the
// environment, a file or a log, and clear it after use. c is killed because
// two holders of the same keys would seal different messages under the
// same counter.
func (c *Channel) Export() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.deadLocked(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(exported{
		Version: exportVersion,
		URL:     c.url,
		Session: c.session,
		SendKey: c.send.key[:],
		SendSeq: c.send.seq,
		RecvKey: c.recv.key[:],
		RecvSeq: c.recv.seq,
	})
	if err != nil {
		return nil, bug(err)
	}
	c.killLocked(errors.New("exported"))
	return b, nil
}

// ImportChannel decodes a channel encoded by [Channel.Export]. It does not
// modify b; the caller should clear it.
func ImportChannel(b []byte) (*Channel, error) {
	var e exported
	defer func() {
		clear(e.SendKey)
		clear(e.RecvKey)
	}()
	if err := decodeStrict(b, &e); err != nil {
		return nil, fmt.Errorf("remote: import channel: %w", errors.Join(err, ErrConfig))
	}
	if e.Version != exportVersion {
		return nil, fmt.Errorf("remote: import channel: version %d, want %d: %w", e.Version, exportVersion, ErrConfig)
	}
	base, err := checkURL(e.URL)
	if err != nil {
		return nil, fmt.Errorf("remote: import channel: %w", err)
	}
	if err := checkSession(e.Session); err != nil {
		return nil, fmt.Errorf("remote: import channel: %w", errors.Join(err, ErrConfig))
	}
	if len(e.SendKey) != KeySize || len(e.RecvKey) != KeySize {
		return nil, fmt.Errorf("remote: import channel: keys of %d and %d bytes, want %d: %w", len(e.SendKey), len(e.RecvKey), KeySize, ErrConfig)
	}
	// Equal keys would let a message be reflected back to its sender
	// (only the direction label in the additional data would differ), and
	// a zero key is a wiped one.
	if subtle.ConstantTimeCompare(e.SendKey, e.RecvKey) == 1 || subtle.ConstantTimeCompare(e.SendKey, make([]byte, KeySize)) == 1 ||
		subtle.ConstantTimeCompare(e.RecvKey, make([]byte, KeySize)) == 1 {
		return nil, fmt.Errorf("remote: import channel: keys are equal or zero: %w", ErrConfig)
	}
	ch := &Channel{
		url:     base,
		session: e.Session,
		send:    half{dir: dirC2E, seq: e.SendSeq},
		recv:    half{dir: dirE2C, seq: e.RecvSeq},
	}
	copy(ch.send.key[:], e.SendKey)
	copy(ch.recv.key[:], e.RecvKey)
	return ch, nil
}
