package seccomp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func decodeOCI(t *testing.T, b []byte) ociProfile {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p ociProfile
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("the container profile is not the expected JSON: %v", err)
	}
	return p
}

func TestOCIProfileShape(t *testing.T) {
	for arch, want := range map[string]string{"amd64": "SCMP_ARCH_X86_64", "arm64": "SCMP_ARCH_AARCH64"} {
		t.Run(arch, func(t *testing.T) {
			o, err := OCIProfile(arch)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(o.JSON)
			if o.SHA256 != hex.EncodeToString(sum[:]) {
				t.Fatalf("SHA256 %s is not the hash of the JSON", o.SHA256)
			}
			again, _ := OCIProfile(arch)
			if !bytes.Equal(again.JSON, o.JSON) {
				t.Fatal("two profiles of one architecture differ")
			}
			p := decodeOCI(t, o.JSON)
			if p.DefaultAction != actErrno || p.DefaultErrnoRet != linuxEPERM || !slices.Equal(p.Architectures, []string{want}) {
				t.Fatalf("default %s/%d, architectures %q; want EPERM and only %s", p.DefaultAction, p.DefaultErrnoRet, p.Architectures, want)
			}
			kinds := map[string]string{} // syscall -> how the profile treats it
			for _, r := range p.Syscalls {
				// libseccomp 2.5 mis-compiles two comparisons of one
				// argument in a rule: never emit one.
				var seen []uint
				for _, a := range r.Args {
					if slices.Contains(seen, a.Index) {
						t.Errorf("rule for %q compares argument %d twice", r.Names, a.Index)
					}
					seen = append(seen, a.Index)
				}
				for _, n := range r.Names {
					kind := r.Action
					switch {
					case r.ErrnoRet != nil && *r.ErrnoRet == linuxENOSYS:
						kind = "enosys"
					case r.ErrnoRet != nil:
						kind = "eperm"
					case len(r.Args) > 0:
						kind = "checked"
					}
					if prev, ok := kinds[n]; ok && (prev != kind || kind != "checked") {
						t.Errorf("%s has two rules (%s, %s)", n, prev, kind)
					}
					kinds[n] = kind
				}
			}
			for _, n := range AlwaysDenied() {
				want := "eperm"
				if n == "clone3" {
					want = "enosys"
				}
				if kinds[n] != want {
					t.Errorf("always-denied %s is %q; want %s", n, kinds[n], want)
				}
			}
			for _, n := range ArgChecked() {
				if kinds[n] != "checked" {
					t.Errorf("argument-checked %s is %q", n, kinds[n])
				}
			}
			for _, n := range Allowed() {
				if kinds[n] != actAllow {
					t.Errorf("allowed %s is %q", n, kinds[n])
				}
			}
			if len(kinds) != len(AlwaysDenied())+len(ArgChecked())+len(Allowed()) {
				t.Errorf("the profile names %d syscalls; the lists %d", len(kinds), len(AlwaysDenied())+len(ArgChecked())+len(Allowed()))
			}
		})
	}
	if _, err := OCIProfile("386"); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("386: %v; want ErrUnsupported", err)
	}
}

// TestMaskedBlocks checks that the blocks cover exactly [lo, hi], at the
// edges and at random points.
func TestMaskedBlocks(t *testing.T) {
	in := func(bs []ociArg, x uint64) bool {
		return slices.ContainsFunc(bs, func(a ociArg) bool { return x&a.Value == a.ValueTwo })
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range [][2]uint64{{0, 0x5411}, {0x5413, 0x541b}, {0x541d, 0xffffffff}, {upper32 | 1<<31, ^uint64(0)}, {0, ^uint64(0)}, {7, 7}, {1, 1 << 40}} {
		lo, hi := c[0], c[1]
		bs := maskedBlocks(1, lo, hi)
		if len(bs) > 128 {
			t.Errorf("[%#x, %#x]: %d blocks", lo, hi, len(bs))
		}
		probes := []uint64{lo, hi, lo - 1, hi + 1, 0, ^uint64(0)}
		for range 2000 {
			inside := lo + r.Uint64() // the whole range
			if hi-lo < ^uint64(0) {
				inside = lo + r.Uint64N(hi-lo+1)
			}
			probes = append(probes, r.Uint64(), inside, lo+r.Uint64N(1<<20))
		}
		for _, x := range probes {
			if got, want := in(bs, x), x >= lo && x <= hi; got != want {
				t.Fatalf("[%#x, %#x]: %#x covered=%v; want %v", lo, hi, x, got, want)
			}
		}
	}
}
