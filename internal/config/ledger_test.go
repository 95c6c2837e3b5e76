package config

import (
	"fmt"
	"strings"
	"testing"
)

func TestLedgerSection(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want func(Ledger) error
		bad  string // variable named by the error
	}{
		{"defaults", map[string]string{}, func(l Ledger) error {
			if l.DatabaseURL != "" || l.PoolSize != DefaultPoolSize() || l.CheckpointEvents != 1000 || l.CheckpointSecs != 60 || l.KeyPassphrase.Set() {
				return fmt.Errorf("got %+v", l)
			}
			return nil
		}, ""},
		{"all set", map[string]string{"DATABASE_URL": "postgres://u:pw@h/db", "DATABASE_POOL_SIZE": "7", "ECTO_CHECKPOINT_EVENTS": "10", "ECTO_CHECKPOINT_SECS": "5", "ECTO_KEY_PASSPHRASE": " pass phrase "}, func(l Ledger) error {
			if l.DatabaseURL != "postgres://u:pw@h/db" || l.PoolSize != 7 || l.CheckpointEvents != 10 || l.CheckpointSecs != 5 || l.KeyPassphrase.Reveal() != " pass phrase " {
				return fmt.Errorf("got %+v", l)
			}
			if s := fmt.Sprintf("%v %+v %#v", l.KeyPassphrase, l, l); strings.Contains(s, "pass phrase") {
				return fmt.Errorf("passphrase printed: %s", s)
			}
			return nil
		}, ""},
		{"memory", map[string]string{"DATABASE_URL": "sqlite::memory:"}, nil, ""},
		{"sqlite file", map[string]string{"DATABASE_URL": "sqlite:///tmp/x.db"}, nil, ""},
		{"unknown scheme", map[string]string{"DATABASE_URL": "mysql://root:hunter2@h/db"}, nil, "DATABASE_URL"},
		{"empty sqlite path", map[string]string{"DATABASE_URL": "sqlite:"}, nil, "DATABASE_URL"},
		{"pool zero", map[string]string{"DATABASE_POOL_SIZE": "0"}, nil, "DATABASE_POOL_SIZE"},
		{"events not a number", map[string]string{"ECTO_CHECKPOINT_EVENTS": "many"}, nil, "ECTO_CHECKPOINT_EVENTS"},
		{"secs negative", map[string]string{"ECTO_CHECKPOINT_SECS": "-1"}, nil, "ECTO_CHECKPOINT_SECS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"HOME": "/home/u"}
			for k, v := range tc.env {
				env[k] = v
			}
			cfg, err := Load(MapLookup(env))
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("Load error %v; want one naming %s", err, tc.bad)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Fatal("the error echoes a database password")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil {
				if err := tc.want(cfg.Ledger); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
