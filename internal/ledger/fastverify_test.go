package ledger

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"
)

func TestFastVerifyMatchesStdlib(t *testing.T) {
	for range 8 {
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		v := newKeyVerifier(pub)
		for i := range 64 {
			msg := make([]byte, i)
			rand.Read(msg)
			sig := ed25519.Sign(priv, msg)
			if !v.verify(msg, sig) {
				t.Fatalf("valid signature %d rejected", i)
			}
			// Every single-bit flip of the signature must agree with the
			// standard library.
			for bit := 0; bit < 512; bit += 7 {
				bad := append([]byte(nil), sig...)
				bad[bit/8] ^= 1 << (bit % 8)
				if got, want := v.verify(msg, bad), ed25519.Verify(pub, msg, bad); got != want {
					t.Fatalf("flip of bit %d: fast %v, stdlib %v", bit, got, want)
				}
			}
		}
	}
	// A non-canonical S (S + L) is rejected by both.
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	sig := ed25519.Sign(priv, []byte("m"))
	l := []byte{0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10}
	bad := append([]byte(nil), sig...)
	var carry uint16
	for i := range 32 {
		s := uint16(bad[32+i]) + uint16(l[i]) + carry
		bad[32+i], carry = byte(s), s>>8
	}
	if got, want := newKeyVerifier(pub).verify([]byte("m"), bad), ed25519.Verify(pub, []byte("m"), bad); got != want || got {
		t.Fatalf("S+L: fast %v, stdlib %v; want both false", got, want)
	}
	// A public key that does not decode fails every signature.
	if newKeyVerifier(make([]byte, 31)).verify([]byte("m"), sig) {
		t.Fatal("short public key verified")
	}
}

func FuzzFastVerify(f *testing.F) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	v := newKeyVerifier(pub)
	f.Add([]byte("msg"), ed25519.Sign(priv, []byte("msg")), []byte{})                    // valid
	f.Add([]byte("msg"), ed25519.Sign(priv, []byte("other")), []byte{})                  // wrong message
	f.Add([]byte(""), make([]byte, 64), []byte{})                                        // zero signature
	f.Add([]byte("x"), append(make([]byte, 63), 0xff), []byte{})                         // high bits of S
	f.Add([]byte("msg"), ed25519.Sign(priv, []byte("msg")), []byte{1, 0, 0, 0, 0, 0, 0}) // other key
	f.Fuzz(func(t *testing.T, msg, sig, keySeed []byte) {
		p, kv := pub, v
		if len(keySeed) > 0 {
			// Arbitrary 32-byte public keys, including ones that do not
			// decode or have small order.
			p = make([]byte, 32)
			copy(p, keySeed)
			kv = newKeyVerifier(p)
		}
		want := len(sig) == 64 && ed25519.Verify(p, msg, sig)
		if got := kv.verify(msg, sig); got != want {
			t.Fatalf("key %x msg %x sig %x: fast %v, stdlib %v", p, msg, sig, got, want)
		}
	})
}

func BenchmarkVerifySignature(b *testing.B) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	msg := make([]byte, 32)
	sig := ed25519.Sign(priv, msg)
	b.Run("stdlib", func(b *testing.B) {
		for b.Loop() {
			ed25519.Verify(pub, msg, sig)
		}
	})
	b.Run("fixed-base", func(b *testing.B) {
		v := newKeyVerifier(pub)
		for b.Loop() {
			v.verify(msg, sig)
		}
	})
}
