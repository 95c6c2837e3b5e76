package ledger

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
)

var update = flag.Bool("update", false, "rewrite testdata golden files (only when the v1 formulas are deliberately unchanged and a vector is added)")

// vector is one frozen event-hash and signature case.
type vector struct {
	Name            string `json:"name"`
	SessionID       string `json:"session_id"`
	PrevHash        string `json:"prev_hash"` // "" = the genesis prev_hash
	Seq             uint64 `json:"seq"`
	CreatedMicros   int64  `json:"created_at_micros"`
	Type            string `json:"type"`
	Payload         string `json:"payload"`
	Seed            string `json:"signing_seed"`
	GenesisPrevHash string `json:"genesis_prev_hash"`
	Hash            string `json:"hash"`
	LeafHash        string `json:"leaf_hash"`
	Signature       string `json:"signature"`
	KeyID           string `json:"key_id"`
	DID             string `json:"did"`
}

type checkpointVector struct {
	Seed   string `json:"signing_seed"`
	Origin string `json:"origin"`
	Size   int64  `json:"tree_size"`
	Root   string `json:"root"`
	KeyID  string `json:"key_id"`
	Note   string `json:"note"`
	VKey   string `json:"verifier_key"`
}

type goldenFile struct {
	Comment     string             `json:"comment"`
	Events      []vector           `json:"events"`
	Checkpoints []checkpointVector `json:"checkpoints"`
}

func computeVector(t *testing.T, v vector) vector {
	t.Helper()
	id := uuid.MustParse(v.SessionID)
	prev := GenesisPrevHash(id)
	if v.PrevHash != "" {
		var err error
		if prev, err = ParseHash(v.PrevHash); err != nil {
			t.Fatal(err)
		}
	}
	seed, _ := hex.DecodeString(v.Seed)
	k, err := SigningKeyFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	h := EventHash(prev, id, v.Seq, v.CreatedMicros, v.Type, []byte(v.Payload))
	v.GenesisPrevHash = GenesisPrevHash(id).String()
	v.Hash = h.String()
	v.LeafHash = LeafHash(h).String()
	v.Signature = hex.EncodeToString(k.Sign(h))
	v.KeyID = KeyID(k.Public())
	v.DID = DIDKey(k.Public())
	return v
}

func computeCheckpoint(t *testing.T, c checkpointVector) checkpointVector {
	t.Helper()
	seed, _ := hex.DecodeString(c.Seed)
	k, err := SigningKeyFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	root, err := ParseHash(c.Root)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := signCheckpoint(c.Origin, c.Size, root, k)
	if err != nil {
		t.Fatal(err)
	}
	c.Note, c.KeyID = string(cp.Note), cp.KeyID
	if c.VKey, err = CheckpointVerifierKey(c.Origin, k.Public()); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGolden freezes the v1 event hash, the genesis prev_hash, the leaf
// hash, the Ed25519 signature, key ids, did:key and the checkpoint note
// format: if any encoding changes, previously written ledgers would stop
// verifying, so this test fails.
func TestGolden(t *testing.T) {
	path := filepath.Join("testdata", "vectors.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g goldenFile
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Events) < 6 || len(g.Checkpoints) < 1 {
		t.Fatal("golden file lost its vectors")
	}
	for i, v := range g.Events {
		t.Run(v.Name, func(t *testing.T) {
			got := computeVector(t, v)
			if *update {
				g.Events[i] = got
				return
			}
			if got != v {
				t.Fatalf("encoding changed:\ngot  %+v\nwant %+v", got, v)
			}
			sig, _ := hex.DecodeString(v.Signature)
			seed, _ := hex.DecodeString(v.Seed)
			pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
			h, _ := ParseHash(v.Hash)
			if !ed25519.Verify(pub, h[:], sig) {
				t.Fatal("golden signature does not verify")
			}
		})
	}
	for i, c := range g.Checkpoints {
		t.Run("checkpoint", func(t *testing.T) {
			got := computeCheckpoint(t, c)
			if *update {
				g.Checkpoints[i] = got
				return
			}
			if got != c {
				t.Fatalf("checkpoint encoding changed:\ngot  %+v\nwant %+v", got, c)
			}
		})
	}
	if *update {
		out, _ := json.MarshalIndent(g, "", "  ")
		if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
