package ledger

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

func FuzzCanonicalize(f *testing.F) {
	seeds := []string{
		`{"b":1,"a":2}`,                 // member order
		`{"a":1,"a":2}`,                 // duplicate names must be refused
		`"\ud83d\ude00\u00e9"`,          // surrogate pair escape
		`"\ud800"`,                      // lone surrogate must be refused
		`[1E400]`,                       // out of double range
		`[9007199254740993]`,            // integer a double cannot hold
		`[-0.0, 1e-7, 1e21, 0.1]`,       // number forms that change spelling
		`{"\u20ac":1,"\ud83d\ude00":2}`, // UTF-16 versus code point order
		"\"\x7f\u2028\"",                // characters left unescaped
		`[[[[[[[[[[]]]]]]]]]]`,          // nesting
		"{\"a\":\"\xff\"}",              // invalid UTF-8
		` {"x" : [true , null] } `,      // insignificant whitespace
		`7000000001e9`,                  // exponent form canonicalising to an integer above 2^53 (idempotency)
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Canonicalize(in)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("canonical form is not JSON: %q", out)
		}
		again, err := Canonicalize(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not idempotent: %q -> %q (%v)", out, again, err)
		}
		var a, b any
		if err := json.Unmarshal(in, &a); err != nil {
			t.Fatalf("accepted input encoding/json rejects: %q: %v", in, err)
		}
		if err := json.Unmarshal(out, &b); err != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("meaning changed: %q -> %q", in, out)
		}
	})
}

func FuzzParseCheckpointBody(f *testing.F) {
	f.Add("ironvise/0123456789abcdef\n10\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n") // well-formed
	f.Add("ironvise/x\n010\nAAAA\n")                                                       // leading zero, short root
	f.Add("o\n1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\nextension\n")               // extension line refused
	f.Add("o\n-1\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n")                         // negative size
	f.Add("")                                                                              // empty
	f.Fuzz(func(t *testing.T, text string) {
		origin, size, root, err := ParseCheckpointBody(text)
		if err != nil {
			return
		}
		if got := CheckpointBody(origin, size, root); got != text {
			t.Fatalf("accepted a non-canonical body: %q re-encodes as %q", text, got)
		}
	})
}

// FuzzTamperedRecord changes one field of one stored event in a valid
// chain and requires verification to fail whenever anything changed.
func FuzzTamperedRecord(f *testing.F) {
	m := newMemChain(f, 10)
	f.Add(uint8(3), uint8(0), []byte(`{"content":"x","type":"observation"}`)) // payload swapped
	f.Add(uint8(0), uint8(1), []byte{1})                                      // hash byte
	f.Add(uint8(9), uint8(3), []byte{})                                       // signature emptied
	f.Add(uint8(5), uint8(5), []byte{1})                                      // created time
	f.Add(uint8(2), uint8(6), []byte{7})                                      // sequence
	f.Add(uint8(9), uint8(8), []byte{200})                                    // log index moved past the checkpoint
	f.Add(uint8(4), uint8(9), []byte("issuer"))                               // signer flipped
	f.Add(uint8(1), uint8(4), []byte("checkpoint"))                           // type renamed
	f.Fuzz(func(t *testing.T, which, field uint8, data []byte) {
		in := m.in
		in.Events = slices.Clone(m.in.Events)
		i := int(which) % len(in.Events)
		ev := in.Events[i]
		ev.Payload, ev.Signature = slices.Clone(ev.Payload), slices.Clone(ev.Signature)
		orig := in.Events[i]
		switch field % 10 {
		case 0:
			ev.Payload = data
		case 1:
			copy(ev.Hash[:], data)
		case 2:
			copy(ev.PrevHash[:], data)
		case 3:
			ev.Signature = data
		case 4:
			ev.Type = string(data)
		case 5:
			ev.CreatedMicros += int64(byteSum(data))
		case 6:
			ev.Seq += uint64(byteSum(data))
		case 7:
			ev.KeyID = string(data)
		case 8:
			ev.LogIndex += int64(byteSum(data))
		case 9:
			ev.Signer = string(data)
		}
		in.Events[i] = ev
		// What the database would report about leaves left without an
		// event (every leaf of the in-memory log belongs to this chain).
		in.MissingLeaf = -1
		have := map[int64]bool{}
		for _, e := range in.Events {
			have[e.LogIndex] = true
		}
		for idx := int64(0); idx < in.Checkpoint.TreeSize; idx++ {
			if !have[idx] {
				in.MissingLeaf = idx
				break
			}
		}
		r := VerifyEvents(&in)
		changed := !reflect.DeepEqual(orig, ev)
		if changed && r.OK() {
			t.Fatalf("event %d field %d changed to %q and all checks passed", i, field%10, data)
		}
		if !changed && !r.OK() {
			name, c, _ := r.FirstFailure()
			t.Fatalf("unchanged chain failed: %s at %d: %s", name, c.Seq, c.Problem)
		}
	})
}

// byteSum adds up the bytes of b: a fuzzed offset for a numeric field.
func byteSum(b []byte) int {
	n := 0
	for _, c := range b {
		n += int(c)
	}
	return n
}
