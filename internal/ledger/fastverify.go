package ledger

import (
	"crypto/ed25519"
	"crypto/sha512"
	"crypto/subtle"
	"sync"

	"filippo.io/edwards25519"
	"filippo.io/edwards25519/field"
)

// Verifying a session checks one Ed25519 signature per event, almost all
// by the same key, and crypto/ed25519 spends most of each verification
// on the 253 doublings of a double-scalar multiplication. keyVerifier
// precomputes, once per key, the multiples j·16^i·(−A) (and, once per
// process, the same for the base point B), so [S]B − [k]A becomes about
// 128 mixed additions and no doublings — roughly three times faster.
//
// It accepts exactly what crypto/ed25519.Verify accepts: the same length
// and high-bit checks on the signature, the same decoding of A, a
// canonical S, k = SHA-512(R ‖ A ‖ M) mod L, and a byte comparison of R
// with the encoding of the recomputed point (the cofactorless equation).
// TestFastVerifyMatchesStdlib and FuzzFastVerify hold it to that.

// nielsPoint is an affine point as (y+x, y−x, 2d·x·y), ready for mixed
// addition.
type nielsPoint struct{ ypx, ymx, xy2d field.Element }

// fixedTable holds j·16^i·P for i in [0, 64) and j in [1, 8].
type fixedTable [64][8]nielsPoint

// d2 is 2·d of edwards25519, d = −121665/121666.
var d2 = sync.OnceValue(func() *field.Element {
	one := new(field.Element).One()
	num := new(field.Element).Mult32(one, 121665)
	num.Negate(num)
	den := new(field.Element).Mult32(one, 121666)
	den.Invert(den)
	d := new(field.Element).Multiply(num, den)
	return d.Add(d, d)
})

// baseTable is the fixed table of the generator, computed on first use and
// read-only afterwards.
var baseTable = sync.OnceValue(func() *fixedTable {
	return newFixedTable(edwards25519.NewGeneratorPoint())
})

func newFixedTable(p *edwards25519.Point) *fixedTable {
	var ext [64 * 8]edwards25519.Point
	base := new(edwards25519.Point).Set(p)
	for i := range 64 {
		ext[i*8].Set(base)
		for j := 1; j < 8; j++ {
			ext[i*8+j].Add(&ext[i*8+j-1], base)
		}
		for range 4 {
			base.Add(base, base)
		}
	}
	// Batch inversion of the Z coordinates (one field inversion in all).
	var xs, ys, zs, prefix [64 * 8]field.Element
	for i := range ext {
		X, Y, Z, _ := ext[i].ExtendedCoordinates()
		xs[i], ys[i], zs[i] = *X, *Y, *Z
		if i == 0 {
			prefix[0] = zs[0]
		} else {
			prefix[i].Multiply(&prefix[i-1], &zs[i])
		}
	}
	var inv, zinv, x, y field.Element
	inv.Invert(&prefix[len(prefix)-1])
	t := new(fixedTable)
	for i := len(ext) - 1; i >= 0; i-- {
		if i > 0 {
			zinv.Multiply(&inv, &prefix[i-1])
			inv.Multiply(&inv, &zs[i])
		} else {
			zinv = inv
		}
		x.Multiply(&xs[i], &zinv)
		y.Multiply(&ys[i], &zinv)
		n := &t[i/8][i%8]
		n.ypx.Add(&y, &x)
		n.ymx.Subtract(&y, &x)
		n.xy2d.Multiply(&x, &y)
		n.xy2d.Multiply(&n.xy2d, d2())
	}
	return t
}

// extPoint is a point in extended coordinates (X:Y:Z:T), x = X/Z,
// y = Y/Z, x·y = T/Z.
type extPoint struct{ X, Y, Z, T field.Element }

func (p *extPoint) setIdentity() {
	p.X.Zero()
	p.Y.One()
	p.Z.One()
	p.T.Zero()
}

// addNiels sets p = p + q, or p − q when neg (mixed addition on
// −x² + y² = 1 + d·x²·y², 7 multiplications).
func (p *extPoint) addNiels(q *nielsPoint, neg bool) {
	var a, b, c, d, e, f, g, h, ypx, ymx field.Element
	ypx.Add(&p.Y, &p.X)
	ymx.Subtract(&p.Y, &p.X)
	if neg {
		// −q = (−x, y): y+x and y−x swap, 2dxy changes sign.
		a.Multiply(&ymx, &q.ypx)
		b.Multiply(&ypx, &q.ymx)
	} else {
		a.Multiply(&ymx, &q.ymx)
		b.Multiply(&ypx, &q.ypx)
	}
	c.Multiply(&p.T, &q.xy2d)
	d.Add(&p.Z, &p.Z)
	e.Subtract(&b, &a)
	h.Add(&b, &a)
	if neg {
		f.Add(&d, &c)
		g.Subtract(&d, &c)
	} else {
		f.Subtract(&d, &c)
		g.Add(&d, &c)
	}
	p.X.Multiply(&e, &f)
	p.Y.Multiply(&g, &h)
	p.T.Multiply(&e, &h)
	p.Z.Multiply(&f, &g)
}

// bytes returns the standard 32-byte encoding of p.
func (p *extPoint) bytes() [32]byte {
	var zinv, x, y field.Element
	zinv.Invert(&p.Z)
	x.Multiply(&p.X, &zinv)
	y.Multiply(&p.Y, &zinv)
	var out [32]byte
	copy(out[:], y.Bytes())
	out[31] |= byte(x.IsNegative() << 7)
	return out
}

// addMul adds [s]P to p, where t is P's fixed table and s a scalar below
// 2^253 in little-endian bytes.
func (p *extPoint) addMul(t *fixedTable, s []byte) {
	var digits [64]int8
	for i := range 32 {
		digits[2*i] = int8(s[i] & 15)
		digits[2*i+1] = int8(s[i] >> 4)
	}
	// Signed radix 16: every digit in [−8, 8).
	for i := range 63 {
		carry := (digits[i] + 8) >> 4
		digits[i] -= carry << 4
		digits[i+1] += carry
	}
	for i, dg := range digits {
		switch {
		case dg > 0:
			p.addNiels(&t[i][dg-1], false)
		case dg < 0:
			p.addNiels(&t[i][-dg-1], true)
		}
	}
}

// keyVerifier verifies many signatures by one public key.
type keyVerifier struct {
	pub  []byte
	negA *fixedTable // nil when pub does not decode (every signature fails)
}

func newKeyVerifier(pub ed25519.PublicKey) *keyVerifier {
	v := &keyVerifier{pub: append([]byte(nil), pub...)}
	if len(pub) != ed25519.PublicKeySize {
		return v
	}
	A, err := new(edwards25519.Point).SetBytes(pub)
	if err != nil {
		return v
	}
	v.negA = newFixedTable(new(edwards25519.Point).Negate(A))
	return v
}

// verify reports whether sig is a valid Ed25519 signature of msg by the
// key, with crypto/ed25519.Verify's acceptance rules.
func (v *keyVerifier) verify(msg, sig []byte) bool {
	var r extPoint
	if !v.recompute(msg, sig, &r) {
		return false
	}
	enc := r.bytes()
	return subtle.ConstantTimeCompare(enc[:], sig[:32]) == 1
}

// recompute sets r = [S]B − [k]A for sig over msg, or reports false when
// the signature is malformed.
func (v *keyVerifier) recompute(msg, sig []byte, r *extPoint) bool {
	if v.negA == nil || len(sig) != ed25519.SignatureSize || sig[63]&224 != 0 {
		return false
	}
	h := sha512.New()
	h.Write(sig[:32])
	h.Write(v.pub)
	h.Write(msg)
	var digest [64]byte
	k, err := edwards25519.NewScalar().SetUniformBytes(h.Sum(digest[:0]))
	if err != nil {
		return false
	}
	S, err := edwards25519.NewScalar().SetCanonicalBytes(sig[32:])
	if err != nil {
		return false
	}
	r.setIdentity()
	r.addMul(baseTable(), S.Bytes())
	r.addMul(v.negA, k.Bytes())
	return true
}
